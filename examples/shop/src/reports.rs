//! `sales_report`: a slow tool that reports progress and honours cancellation.

use std::time::Duration;

use carmy::{AgentError, Context, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::books;

/// Arguments of `sales_report`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReportInput {
    /// How many seconds the report takes to compute (1 to 60, default 5).
    #[schemars(range(min = 1, max = 60))]
    pub seconds: Option<u32>,
}

/// The report.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SalesReport {
    /// Orders placed and not cancelled.
    pub orders: u32,
    /// Their value, in cents.
    pub revenue_cents: u64,
    /// Orders cancelled.
    pub cancelled: u32,
}

/// Compute the sales report. Slow on purpose (one step per tenth of a second): it reports
/// progress and stops as soon as the call is cancelled.
#[tool(effect = "read", idempotent, title = "Sales report", timeout = "90s")]
pub async fn sales_report(input: ReportInput, ctx: &Context) -> Result<SalesReport, AgentError> {
    let steps = input.seconds.unwrap_or(5) * 10;
    for step in 1..=steps {
        // The runtime drops this future on cancellation; awaiting here is what lets it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        ctx.progress(
            f64::from(step),
            Some(f64::from(steps)),
            Some("crunching orders"),
        );
    }
    let orders = books::all_orders(ctx.records()).await?;
    let mut report = SalesReport {
        orders: 0,
        revenue_cents: 0,
        cancelled: 0,
    };
    for order in &orders {
        match order.status {
            crate::orders::OrderStatus::Placed => {
                report.orders += 1;
                report.revenue_cents += order.total_cents;
            }
            crate::orders::OrderStatus::Cancelled => report.cancelled += 1,
        }
    }
    tracing::info!(
        orders = report.orders,
        cancelled = report.cancelled,
        "sales report computed"
    );
    Ok(report)
}
