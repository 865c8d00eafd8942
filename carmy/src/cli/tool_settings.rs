//! `[tool_settings]` on the runtime the command line builds: the rate limit of every tool that
//! sets none of its own, the deadline of every tool without a `timeout`, the tools that
//! must be confirmed whatever they declare, and the bound on a result's size. A runtime built
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
    if let Some(rules) = settings.confirmation() {
        carmy = carmy.require_confirmation(rules);
    }
    if let Some(bytes) = settings.max_result_bytes {
        carmy = carmy.max_result_bytes(bytes);
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
        (
            "tool_settings.require_confirmation",
            tools.require_confirmation.is_some(),
        ),
        (
            "tool_settings.max_result_bytes",
            tools.max_result_bytes.is_some(),
        ),
    ]
    .into_iter()
    .filter_map(|(key, is_set)| is_set.then_some(key))
    .chain(settings.request_ids.set().into_iter().map(|(key, _)| key))
    .collect();
    (!set.is_empty()).then(|| {
        format!(
            "{} cannot apply: this binary builds its runtime before it reads the configuration \
             (carmy::cli::Cli::new); build it with Cli::build to configure it",
            set.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use carmy_core::{AgentError, Effect, Invocation, NoInput, RateLimit, Tool, ToolSpec};

    use super::*;
    use crate::cli::config::Rate;

    struct Plain;

    impl Tool for Plain {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("plain", Effect::None);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    struct Timed;

    impl Tool for Timed {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("timed", Effect::None)
            .timeout(Duration::from_secs(5))
            .rate_limit(RateLimit::unlimited());
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    #[test]
    fn the_settings_reach_the_tools_that_set_nothing_of_their_own() {
        let settings = ToolSettings {
            rate_limit: Rate {
                requests_per_minute: Some(30),
                burst_size: Some(5),
            },
            max_execution_time_ms: Some(1500),
            allowed_tools: None,
            require_confirmation: Some(vec!["plain".to_owned()]),
            max_result_bytes: Some(4096),
            disabled: Vec::new(),
        };
        let runtime = apply(Carmy::new().tool(Plain).tool(Timed), &settings)
            .build()
            .unwrap();
        assert_eq!(runtime.limits().max_result_bytes, 4096);
        let catalog = runtime.catalog();
        let plain = catalog.get("plain").unwrap();
        assert_eq!(plain.timeout(), Duration::from_millis(1500));
        assert_eq!(plain.rate_limit(), RateLimit::per_minute(30).burst(5));
        assert_eq!(plain.confirmation(), carmy_core::Confirmation::Required);
        let timed = catalog.get("timed").unwrap();
        assert_eq!(timed.timeout(), Duration::from_secs(5));
        assert!(timed.rate_limit().is_unlimited());
        assert_eq!(timed.confirmation(), carmy_core::Confirmation::None);
    }

    #[test]
    fn a_built_runtime_refuses_what_only_a_builder_takes() {
        let mut settings = Settings::default();
        assert_eq!(refused_on_built(&settings), None);
        settings.tool_settings.max_execution_time_ms = Some(10);
        settings.store = Some("memory".to_owned());
        settings.request_ids.max = Some(10);
        let refused = refused_on_built(&settings).unwrap();
        assert!(
            refused.starts_with(
                "store, tool_settings.max_execution_time_ms, request_ids.max cannot apply"
            ),
            "{refused}"
        );
    }
}
