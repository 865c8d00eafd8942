//! Rate-limit buckets on the server ([`RateLimitStore`]): every replica connected to it shares
//! each tool's limit.
//!
//! A take is one script (`lua/take_rate.lua`) on one key per tool and principal (see `keys`),
//! sent once at most: an answer lost on the way fails the take ([`StoreError::Unavailable`],
//! and the runtime falls back to its own bucket) rather than send it again and take twice. The
//! key holds the bucket's theoretical arrival time by the server's clock (`TIME`), so replicas
//! agree whatever their own clocks say, and expires when its bucket is full again, so the
//! server holds only the buckets drawn within their refill time. Intervals go to the script in
//! whole microseconds (rounded up, the step at least one), at most [`LONGEST_US`] so that
//! they stay exact in Lua's numbers once added to now.

use std::time::Duration;

use carmy_core::{RateLimit, RateLimitStore, StoreError};
use redis::Script;

use super::{
    RedisStore,
    link::{Link, LinkError},
    script_calls::{field, invoke_once, number, unexpected},
};

const TAKE_RATE: &str = include_str!("lua/take_rate.lua");

/// The longest span sent (about 71 years): with now (about 2^51 µs since the epoch) it stays
/// below 2^53, what Lua's numbers hold exactly.
const LONGEST_US: u64 = 1 << 51;

/// The rate-limit script.
pub(super) struct TakeRateScript(Script);

impl TakeRateScript {
    pub(super) fn new() -> Self {
        Self(Script::new(TAKE_RATE))
    }

    /// Loads the script into the server's cache.
    pub(super) async fn load(&self, link: &Link) -> Result<(), LinkError> {
        link.run("script load", |mut connection, _| async move {
            self.0.load_async(&mut connection).await
        })
        .await?;
        Ok(())
    }
}

impl RateLimitStore for RedisStore {
    async fn take(
        &self,
        tool: &str,
        principal: Option<&str>,
        limit: RateLimit,
    ) -> Result<Result<(), Duration>, StoreError> {
        let (Some(step), Some(tolerance)) = (limit.emission_interval(), limit.tolerance()) else {
            return Ok(Ok(()));
        };
        let bucket = self.keys.rate_bucket(tool, principal.unwrap_or_default());
        let (step, tolerance) = (micros(step).max(1), micros(tolerance));
        let reply = invoke_once(&self.link, "take_rate", |_| {
            let mut invocation = self.take_rate_script.0.prepare_invoke();
            invocation.key(&bucket).arg(step).arg(tolerance);
            invocation
        })
        .await?;
        match field("take_rate", &reply, 0)? {
            "taken" => Ok(Ok(())),
            "wait" => {
                let wait = number("take_rate", &reply, 1)?;
                Ok(Err(Duration::from_micros(wait.max(1))))
            }
            _ => Err(unexpected("take_rate", &reply)),
        }
    }
}

/// `duration` in whole microseconds, rounded up, at most [`LONGEST_US`].
fn micros(duration: Duration) -> u64 {
    let whole = duration.as_micros() + u128::from(!duration.subsec_nanos().is_multiple_of(1_000));
    u64::try_from(whole).map_or(LONGEST_US, |us| us.min(LONGEST_US))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_go_in_whole_microseconds_rounded_up() {
        assert_eq!(micros(Duration::from_millis(3)), 3_000);
        assert_eq!(micros(Duration::from_nanos(1_001)), 2);
        assert_eq!(micros(Duration::MAX), LONGEST_US);
    }
}
