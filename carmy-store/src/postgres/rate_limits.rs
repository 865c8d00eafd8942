//! Rate-limit buckets in the schema ([`RateLimitStore`]): every replica connected to it shares
//! each tool's limit.
//!
//! A take is one statement, `SELECT take_rate(...)`: the schema's function (layout 5, see
//! `schema`) upserts the bucket's row (tool, principal) with its theoretical arrival time,
//! admitting the call when the GCRA allows it, and otherwise reads the locked row for the
//! wait. Times are the server's clock (`statement_timestamp()`), so replicas agree whatever
//! their own clocks say; intervals go to it in whole microseconds (rounded up, at least one).
//! A row whose bucket is full again is the same as none: the sweep deletes them, in batches,
//! so the table holds only the buckets drawn within their refill time.

use std::time::Duration;

use carmy_core::{RateLimit, RateLimitStore, StoreError};
use deadpool_postgres::Object;

use super::{PostgresStore, connection::Database, error::Failure, sql::Sql, sweep::BATCH};

impl RateLimitStore for PostgresStore {
    async fn take(
        &self,
        tool: &str,
        principal: Option<&str>,
        limit: RateLimit,
    ) -> Result<Result<(), Duration>, StoreError> {
        let (Some(step), Some(tolerance)) = (limit.emission_interval(), limit.tolerance()) else {
            return Ok(Ok(()));
        };
        let db = &self.shared.db;
        let principal = principal.unwrap_or_default();
        let wait_us: i64 = on_connection!(db, "taking from a rate limit", |connection| {
            take(&mut connection, &db.sql, tool, principal, step, tolerance)
        })?;
        Ok(match u64::try_from(wait_us) {
            Ok(0) | Err(_) => Ok(()),
            Ok(wait) => Err(Duration::from_micros(wait)),
        })
    }
}

async fn take(
    connection: &mut Object,
    sql: &Sql,
    tool: &str,
    principal: &str,
    step: Duration,
    tolerance: Duration,
) -> Result<i64, Failure> {
    let statement = connection.prepare_cached(&sql.take_rate).await?;
    let row = connection
        .query_one(
            &statement,
            &[
                &tool.as_bytes(),
                &principal.as_bytes(),
                &micros(step).max(1),
                &micros(tolerance),
            ],
        )
        .await?;
    Ok(row.try_get::<_, i64>(0)?)
}

/// The longest span sent (about a thousand years): `timestamptz` arithmetic stays in range.
const LONGEST_US: i64 = 1000 * 366 * 24 * 60 * 60 * 1_000_000;

/// `duration` in whole microseconds, rounded up, at most [`LONGEST_US`].
fn micros(duration: Duration) -> i64 {
    let whole = duration.as_micros() + u128::from(!duration.subsec_nanos().is_multiple_of(1_000));
    i64::try_from(whole).map_or(LONGEST_US, |us| us.min(LONGEST_US))
}

/// Forgets up to [`BATCH`] buckets that are full again. Returns how many went.
pub(super) async fn forget_full(connection: &mut Object, sql: &Sql) -> Result<u64, Failure> {
    let statement = connection.prepare_cached(&sql.forget_full_buckets).await?;
    Ok(connection.execute(&statement, &[&BATCH]).await?)
}

impl super::Shared {
    /// Forgets every bucket full again, in batches of [`BATCH`].
    pub(super) async fn sweep_rate_buckets(&self) -> Result<(), Failure> {
        loop {
            let gone = on_connection!(&self.db, "sweeping rate limits", |connection| {
                forget_full(&mut connection, &self.db.sql)
            })?;
            if gone < u64::try_from(BATCH).unwrap_or(u64::MAX) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_go_in_whole_microseconds_rounded_up() {
        assert_eq!(micros(Duration::from_millis(3)), 3_000);
        assert_eq!(micros(Duration::from_nanos(1)), 1);
        assert_eq!(micros(Duration::from_nanos(1_001)), 2);
        assert_eq!(micros(Duration::MAX), LONGEST_US);
    }
}
