//! `[tool_settings]` on the runtime the command line builds: the rate limit of every tool that
//! sets none of its own, and the deadline of every tool without a `timeout`. A runtime built
//! before the configuration was read ([`Cli::new`](super::Cli::new)) cannot take them: a
//! configuration that sets them is refused rather than ignored.

use std::time::Duration;

use carmy_core::Carmy;

use super::config::{Settings, ToolSettings};

/// `carmy` with the tool settings applied.
pub(super) fn apply(mut carmy: Carmy, settings: &ToolSettings) -> Carmy {
    let limit = settings.rate_limit.limit();
    if !limit.is_unlimited() {
        carmy = carmy.rate_limit(limit);
    }
    if let Some(millis) = settings.max_execution_time_ms {
        carmy = carmy.default_timeout(Duration::from_millis(millis));
    }
    carmy
}

/// Why `settings` cannot apply to a runtime that is already built, if they set what only a
/// builder takes.
pub(super) fn refused_on_built(settings: &Settings) -> Option<String> {
    let tools = &settings.tool_settings;
    let set: Vec<&str> = [
        ("store", settings.store.is_some()),
        (
            "tool_settings.rate_limit",
            tools.rate_limit.requests_per_minute.is_some(),
        ),
        (
            "tool_settings.max_execution_time_ms",
            tools.max_execution_time_ms.is_some(),
        ),
    ]
    .into_iter()
    .filter_map(|(key, is_set)| is_set.then_some(key))
    .collect();
    (!set.is_empty()).then(|| {
        format!(
            "{} cannot apply: this binary builds its runtime before it reads the configuration \
             (carmy::cli::Cli::new); build it with Cli::build to configure it",
            set.join(", ")
        )
    })
}
