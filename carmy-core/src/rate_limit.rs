//! `RateLimit`: how often one principal may call one tool, as a value (`30/min`, burst 5).
//! The buckets that enforce it live in `rate_buckets` (this process's) or in a
//! `RateLimitStore` (shared by replicas).

use std::{fmt, num::NonZeroU32, time::Duration};

use governor::Quota;

/// How often one principal may call a tool: `requests` per `period`, with up to `burst` calls
/// at once (by default, `requests`). Built in a `const` by `#[tool]`.
///
/// ```
/// use carmy_core::RateLimit;
///
/// const ORDERS: RateLimit = RateLimit::per_minute(30).burst(5);
/// assert_eq!(ORDERS.to_string(), "30/min (burst 5)");
/// assert_eq!(RateLimit::unlimited().to_string(), "unlimited");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RateLimit(Option<Bucket>);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Bucket {
    requests: NonZeroU32,
    period: Duration,
    burst: Option<NonZeroU32>,
}

impl RateLimit {
    /// No limit: for a tool exempt from the runtime's default.
    pub const fn unlimited() -> Self {
        Self(None)
    }

    /// `requests` calls per second.
    ///
    /// # Panics
    /// When `requests` is zero (at compile time, in a `const`).
    pub const fn per_second(requests: u32) -> Self {
        Self::per(requests, Duration::from_secs(1))
    }

    /// `requests` calls per minute.
    ///
    /// # Panics
    /// When `requests` is zero (at compile time, in a `const`).
    pub const fn per_minute(requests: u32) -> Self {
        Self::per(requests, Duration::from_secs(60))
    }

    /// `requests` calls per hour.
    ///
    /// # Panics
    /// When `requests` is zero (at compile time, in a `const`).
    pub const fn per_hour(requests: u32) -> Self {
        Self::per(requests, Duration::from_secs(3600))
    }

    const fn per(requests: u32, period: Duration) -> Self {
        match NonZeroU32::new(requests) {
            Some(requests) => Self(Some(Bucket {
                requests,
                period,
                burst: None,
            })),
            None => panic!("a rate limit allows at least one request; use `RateLimit::unlimited`"),
        }
    }

    /// Up to `burst` calls at once, before the rate applies (default: the requests of one
    /// period). No effect on [`unlimited`](Self::unlimited).
    ///
    /// # Panics
    /// When `burst` is zero (at compile time, in a `const`).
    pub const fn burst(self, burst: u32) -> Self {
        let Some(bucket) = self.0 else {
            return self;
        };
        match NonZeroU32::new(burst) {
            Some(burst) => Self(Some(Bucket {
                burst: Some(burst),
                ..bucket
            })),
            None => panic!("a burst of zero would refuse every call"),
        }
    }

    /// Whether this is no limit.
    pub const fn is_unlimited(&self) -> bool {
        self.0.is_none()
    }

    /// The calls allowed per [`period`](Self::period) (`None`: unlimited).
    pub fn requests(&self) -> Option<u32> {
        self.0.map(|bucket| bucket.requests.get())
    }

    /// The period the requests are counted over (`None`: unlimited).
    pub fn period(&self) -> Option<Duration> {
        self.0.map(|bucket| bucket.period)
    }

    /// The calls allowed at once (`None`: unlimited).
    pub fn burst_size(&self) -> Option<u32> {
        self.0
            .map(|bucket| bucket.burst.unwrap_or(bucket.requests).get())
    }

    /// How often one call comes back to an emptied bucket: `period / requests`, at least a
    /// nanosecond (`None`: unlimited). With [`burst_size`](Self::burst_size), all a bucket
    /// needs: a store that keeps buckets elsewhere ([`RateLimitStore`](crate::RateLimitStore))
    /// computes its answers from these two.
    pub fn emission_interval(&self) -> Option<Duration> {
        let bucket = self.0?;
        Some((bucket.period / bucket.requests.get()).max(Duration::from_nanos(1)))
    }

    /// How far ahead of now a bucket may have been drawn and still admit a call:
    /// `emission_interval × (burst − 1)` (`None`: unlimited). A bucket drawn up to `now +
    /// tolerance` (its theoretical arrival time) admits one more call; one drawn further
    /// refuses it until then.
    pub fn tolerance(&self) -> Option<Duration> {
        let interval = self.emission_interval()?;
        let burst = self.burst_size()?;
        Some(interval.saturating_mul(burst - 1))
    }

    /// The `governor` quota, for a bucket.
    pub(crate) fn quota(&self) -> Option<Quota> {
        let bucket = self.0?;
        let quota = Quota::with_period(self.emission_interval()?)?;
        Some(quota.allow_burst(bucket.burst.unwrap_or(bucket.requests)))
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(bucket) = self.0 else {
            return f.write_str("unlimited");
        };
        let unit = match bucket.period.as_secs() {
            1 => "s".to_owned(),
            60 => "min".to_owned(),
            3600 => "h".to_owned(),
            _ => format!("{} ms", bucket.period.as_millis()),
        };
        write!(f, "{}/{unit}", bucket.requests)?;
        match bucket.burst {
            Some(burst) => write!(f, " (burst {burst})"),
            None => Ok(()),
        }
    }
}
