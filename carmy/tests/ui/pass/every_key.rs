//! Every attribute key at once, and each flag spelling.

use carmy::prelude::*;

/// Ignored: `description` wins over the doc comment.
#[tool(
    effect = "external_write",
    idempotent,
    parallel_safe = true,
    confirmation = "required",
    task = "optional",
    task_after = "2s",
    rate_limit = "30/min, burst 5",
    name = "orders.send-confirmation_v2",
    title = "Send the order confirmation",
    description = "Emails the customer their order confirmation.",
    timeout = "1m 30s",
    crate = "::carmy"
)]
async fn send_confirmation() -> Result<(), AgentError> {
    Ok(())
}

#[tool(
    effect = "read",
    idempotent = false,
    parallel_safe = false,
    confirmation = "none",
    timeout = "250ms",
    rate_limit = "unlimited"
)]
async fn lookup() -> Result<(), AgentError> {
    Ok(())
}

#[tool(
    effect = "write",
    idempotent = true,
    timeout = "1500us",
    task = "required",
    rate_limit = "2/s"
)]
async fn touch() -> Result<(), AgentError> {
    Ok(())
}

fn main() {
    use std::time::Duration;

    let runtime = Carmy::new()
        .tool(send_confirmation)
        .tool(lookup)
        .tool(touch)
        .build()
        .unwrap();
    let catalog = runtime.catalog();

    let tool = catalog.get("orders.send-confirmation_v2").unwrap();
    assert_eq!(tool.title(), Some("Send the order confirmation"));
    assert_eq!(
        tool.description(),
        "Emails the customer their order confirmation."
    );
    assert_eq!(tool.effect(), Effect::ExternalWrite);
    assert!(tool.idempotent());
    assert!(tool.parallel_safe());
    assert_eq!(tool.confirmation(), carmy::catalog::Confirmation::Required);
    assert_eq!(tool.timeout(), Duration::from_secs(90));
    assert_eq!(tool.task_support(), carmy::task::TaskSupport::Optional);
    assert_eq!(tool.task_after(), Duration::from_secs(2));
    assert_eq!(tool.rate_limit(), carmy::policy::RateLimit::per_minute(30).burst(5));

    let tool = catalog.get("lookup").unwrap();
    assert_eq!(tool.task_support(), carmy::task::TaskSupport::Forbidden);
    assert!(!tool.idempotent() && !tool.parallel_safe());
    assert_eq!(tool.confirmation(), carmy::catalog::Confirmation::None);
    assert_eq!(tool.timeout(), Duration::from_millis(250));
    assert!(tool.rate_limit().is_unlimited());

    let tool = catalog.get("touch").unwrap();
    assert!(tool.idempotent());
    assert_eq!(tool.timeout(), Duration::from_micros(1500));
    assert_eq!(tool.task_support(), carmy::task::TaskSupport::Required);
    assert_eq!(tool.task_after(), Duration::ZERO);
    assert_eq!(tool.rate_limit(), carmy::policy::RateLimit::per_second(2));
}
