//! Single-use tokens in the file ([`RedemptionStore`]): every process that opens it redeems a
//! token once between them.
//!
//! Each redemption is one `BEGIN IMMEDIATE` transaction, so two processes redeeming one token
//! are serialized and exactly one inserts its row. `carmy_redeemed` holds a row per record,
//! under its principal, its issue instant and its nonce (each `u64` kept in an `i64` in the
//! same order, see `crate::ordered`); `carmy_redeemers` a row per principal holding records, with
//! its floor and the expiry of its newest record. Bounded as `carmy_core`'s redemption module
//! says: [`MAX_REDEEMED_PER_PRINCIPAL`] records per principal (the oldest let go past it, which
//! raises the floor), [`MAX_REDEEMING_PRINCIPALS`] principals (a new one past it is refused
//! while every other still holds a live record), so never more than their product in all, plus
//! the anonymous principal's. Expired records are removed when their principal redeems again,
//! when a new principal needs room, and by the sweep.

use std::time::Duration;

use carmy_core::{
    MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, Redemption, RedemptionKey,
    RedemptionStore, StoreError,
};
use rusqlite::{Connection, OptionalExtension};

use super::{
    SqliteStore,
    db::{Db, Keep},
    failure::Result,
    integers::{count, now_ms},
};
use crate::ordered::ordered;

impl RedemptionStore for SqliteStore {
    async fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<Redemption, StoreError> {
        let token = token.clone();
        self.worker
            .run_grouped(move |db| db.redeem(&token, ttl, now_ms))
            .await
    }
}

/// An instant in milliseconds as SQLite keeps one, saturating.
fn instant(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

impl Db {
    pub(super) fn redeem(
        &mut self,
        token: &RedemptionKey,
        ttl: Duration,
        now: u64,
    ) -> Result<Redemption, StoreError> {
        self.atomic(Keep::OnSuccess, |transaction| {
            redeem(transaction, token, ttl, now)
        })
    }

    /// Forgets every record, and every principal, whose time is up by this process's clock.
    pub(super) fn sweep_redemptions(&mut self) -> Result<(), StoreError> {
        self.atomic(Keep::OnSuccess, |transaction| {
            forget_expired(transaction, now_ms())
        })
    }
}

fn redeem(tx: &Connection, token: &RedemptionKey, ttl: Duration, now: u64) -> Result<Redemption> {
    let principal = token.principal();
    let expires_at = instant(token.expires_at_ms(ttl));
    // Records issued at or before it are expired (none while `now` is under the ttl).
    let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    let cutoff = now.checked_sub(ttl).map(ordered);
    let floor = tx
        .prepare_cached("SELECT floor_at, floor_nonce FROM carmy_redeemers WHERE principal = ?1")?
        .query_row([principal], |row| {
            Ok(row
                .get::<_, Option<i64>>(0)?
                .zip(row.get::<_, Option<i64>>(1)?))
        })
        .optional()?;
    let floor = match floor {
        Some(floor) => floor,
        None => {
            if !token.is_anonymous() && crowded(tx, instant(now))? {
                return Ok(Redemption::Crowded);
            }
            tx.prepare_cached(
                "INSERT INTO carmy_redeemers (principal, floor_at, floor_nonce, expires_at) \
                 VALUES (?1, NULL, NULL, ?2)",
            )?
            .execute((principal, expires_at))?;
            None
        }
    };
    let floor = match (floor, cutoff) {
        (Some((at, _)), Some(cutoff)) if at <= cutoff => None,
        (floor, _) => floor,
    };
    if let Some(cutoff) = cutoff {
        tx.prepare_cached("DELETE FROM carmy_redeemed WHERE principal = ?1 AND issued_at <= ?2")?
            .execute((principal, cutoff))?;
    }
    let order = (ordered(token.issued_at_ms()), ordered(token.nonce()));
    if floor.is_some_and(|floor| order <= floor) {
        return Ok(Redemption::Superseded);
    }
    let inserted = tx
        .prepare_cached(
            "INSERT INTO carmy_redeemed (principal, issued_at, nonce, expires_at) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        )?
        .execute((principal, order.0, order.1, expires_at))?;
    if inserted == 0 {
        return Ok(Redemption::AlreadyUsed);
    }
    let held: i64 = tx
        .prepare_cached("SELECT COUNT(*) FROM carmy_redeemed WHERE principal = ?1")?
        .query_row([principal], |row| row.get(0))?;
    let floor = if held > count(MAX_REDEEMED_PER_PRINCIPAL) {
        // The oldest record is newer than the floor, so the floor only moves forward.
        let oldest: (i64, i64) = tx
            .prepare_cached(
                "SELECT issued_at, nonce FROM carmy_redeemed WHERE principal = ?1 \
                 ORDER BY issued_at, nonce LIMIT 1",
            )?
            .query_row([principal], |row| Ok((row.get(0)?, row.get(1)?)))?;
        tx.prepare_cached(
            "DELETE FROM carmy_redeemed WHERE principal = ?1 AND issued_at = ?2 AND nonce = ?3",
        )?
        .execute((principal, oldest.0, oldest.1))?;
        Some(oldest)
    } else {
        floor
    };
    tx.prepare_cached(
        "UPDATE carmy_redeemers SET floor_at = ?2, floor_nonce = ?3, \
         expires_at = max(expires_at, ?4) WHERE principal = ?1",
    )?
    .execute((
        principal,
        floor.map(|floor| floor.0),
        floor.map(|floor| floor.1),
        expires_at,
    ))?;
    Ok(Redemption::Redeemed)
}

/// Whether a new principal must wait: as many hold live records as may, once the expired are
/// forgotten.
fn crowded(tx: &Connection, now: i64) -> Result<bool> {
    let principals = || -> Result<i64> {
        Ok(tx
            .prepare_cached("SELECT COUNT(*) FROM carmy_redeemers WHERE principal != ''")?
            .query_row([], |row| row.get(0))?)
    };
    if principals()? < count(MAX_REDEEMING_PRINCIPALS) {
        return Ok(false);
    }
    forget_expired(tx, now)?;
    Ok(principals()? >= count(MAX_REDEEMING_PRINCIPALS))
}

fn forget_expired(tx: &Connection, now: i64) -> Result<()> {
    tx.prepare_cached("DELETE FROM carmy_redeemed WHERE expires_at <= ?1")?
        .execute([now])?;
    tx.prepare_cached("DELETE FROM carmy_redeemers WHERE expires_at <= ?1")?
        .execute([now])?;
    Ok(())
}
