//! Delivery: the speeds an order can ship at, their prices and dates, and `quote_delivery`, the
//! shop's one tool with no side effect at all (effect `none`: it reads nothing and changes
//! nothing, it computes).

use carmy::{AgentError, tool};
use chrono::{Datelike, NaiveDate, Weekday};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How fast the order ships.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// 3 to 5 business days, free.
    #[default]
    Standard,
    /// Next business day, 9.90.
    Express,
}

impl Delivery {
    /// What the customer pays for it, in cents.
    pub fn price_cents(self) -> u64 {
        match self {
            Delivery::Standard => 0,
            Delivery::Express => 990,
        }
    }

    /// The fewest and the most business days (Monday to Friday) it takes.
    pub fn business_days(self) -> (u32, u32) {
        match self {
            Delivery::Standard => (3, 5),
            Delivery::Express => (1, 1),
        }
    }
}

/// Arguments of `quote_delivery`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QuoteInput {
    /// Delivery speed (default `standard`).
    #[serde(default)]
    pub delivery: Delivery,
    /// The day the order would be placed, `YYYY-MM-DD`.
    pub ordered_on: NaiveDate,
}

/// A delivery quote.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Quote {
    /// The speed quoted.
    pub delivery: Delivery,
    /// Its price, in cents.
    pub price_cents: u64,
    /// The earliest day the parcel arrives.
    pub earliest: NaiveDate,
    /// The latest day the parcel arrives.
    pub latest: NaiveDate,
}

/// Quote a delivery speed: its price and the days the parcel would arrive if ordered on a given
/// day. Business days only: an order on a Saturday or Sunday is handled on Monday.
#[tool(effect = "none", title = "Quote a delivery")]
pub async fn quote_delivery(input: QuoteInput) -> Result<Quote, AgentError> {
    let (fewest, most) = input.delivery.business_days();
    let arrives = |days| {
        after_business_days(input.ordered_on, days).ok_or_else(|| {
            AgentError::validation(
                "DATE_OUT_OF_RANGE",
                format!("no delivery date follows {}", input.ordered_on),
            )
        })
    };
    Ok(Quote {
        delivery: input.delivery,
        price_cents: input.delivery.price_cents(),
        earliest: arrives(fewest)?,
        latest: arrives(most)?,
    })
}

/// The day `days` business days after `day` (`None` past the last date chrono knows).
fn after_business_days(mut day: NaiveDate, days: u32) -> Option<NaiveDate> {
    for _ in 0..days {
        day = day.succ_opt()?;
        while matches!(day.weekday(), Weekday::Sat | Weekday::Sun) {
            day = day.succ_opt()?;
        }
    }
    Some(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    #[test]
    fn business_days_skip_weekends() {
        // 2026-12-04 is a Friday.
        assert_eq!(
            after_business_days(date("2026-12-04"), 1),
            Some(date("2026-12-07"))
        );
        assert_eq!(
            after_business_days(date("2026-12-05"), 1),
            Some(date("2026-12-07"))
        );
        assert_eq!(
            after_business_days(date("2026-12-01"), 5),
            Some(date("2026-12-08"))
        );
        assert_eq!(after_business_days(NaiveDate::MAX, 1), None);
    }
}
