//! Single-use tokens in the schema ([`RedemptionStore`]): every replica connected to it
//! redeems a token once between them.
//!
//! A redemption is one statement, `SELECT redeem(...)`: the schema's function (layout 4, see
//! `schema`) locks the principal's row, forgets its expired records, checks its floor, inserts
//! the record (`ON CONFLICT DO NOTHING`: of concurrent redemptions of one token, one inserts)
//! and lets the oldest go past [`MAX_REDEEMED_PER_PRINCIPAL`], all in that statement's
//! transaction. New principals take turns on an advisory lock, so at most
//! [`MAX_REDEEMING_PRINCIPALS`] hold records (the anonymous one aside), and the store holds at
//! most their product. Times are the caller's (`now_ms`), not the server's: a record lives
//! until `issued_at_ms + ttl` by the clocks of the replicas that issue and redeem tokens.
//! Expired records go when their principal redeems again; principals whose every record
//! expired are forgotten with them, a few at each redemption and all at once when a new
//! principal needs room.

use std::time::Duration;

use carmy_core::{
    MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, Redemption, RedemptionKey,
    RedemptionStore, StoreError,
};
use deadpool_postgres::Object;

use super::{PostgresStore, connection::Database, error::Failure, sql::Sql, task_rows::count};
use crate::ordered::ordered;

impl RedemptionStore for PostgresStore {
    async fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<Redemption, StoreError> {
        let db = &self.shared.db;
        Ok(on_connection!(db, "redeeming a token", |connection| {
            redeem(&mut connection, &db.sql, token, ttl, now_ms)
        })?)
    }
}

async fn redeem(
    connection: &mut Object,
    sql: &Sql,
    token: &RedemptionKey,
    ttl: Duration,
    now: u64,
) -> Result<Redemption, Failure> {
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    let cutoff = now.checked_sub(ttl_ms).map(ordered);
    let instant = |ms: u64| i64::try_from(ms).unwrap_or(i64::MAX);
    let statement = connection.prepare_cached(&sql.redeem).await?;
    let row = connection
        .query_one(
            &statement,
            &[
                &token.principal().as_bytes(),
                &ordered(token.issued_at_ms()),
                &ordered(token.nonce()),
                &cutoff,
                &instant(token.expires_at_ms(ttl)),
                &instant(now),
                &count(MAX_REDEEMED_PER_PRINCIPAL),
                &count(MAX_REDEEMING_PRINCIPALS),
            ],
        )
        .await?;
    match row.try_get::<_, &str>(0)? {
        "redeemed" => Ok(Redemption::Redeemed),
        "used" => Ok(Redemption::AlreadyUsed),
        "superseded" => Ok(Redemption::Superseded),
        "crowded" => Ok(Redemption::Crowded),
        other => Err(Failure::Invalid(format!(
            "the schema's redeem function answered {other:?}"
        ))),
    }
}
