//! SIGHUP: the configuration read again, as at start (the flags, the environment, the file),
//! and what may change while serving applied: the tools, resources and prompts that are
//! disabled (`tool_settings.disabled`, `resources.disabled`, `prompts.disabled`). Every session
//! is then told which lists changed. What cannot change live (the address, the store, the
//! tokens...) is reported by key and kept as it started; a configuration that no longer loads
//! is reported and changes nothing.

use carmy_core::Runtime;

use super::config::{ConfigError, Settings};

/// The source of the configuration's rules among those that disable
/// ([`Catalog::disable_as`](carmy_core::Catalog::disable_as)): a reload replaces them, and leaves
/// what the application disables alone.
pub(super) const CONFIGURATION: &str = "configuration";

/// The keys whose values a reload applies.
const RELOADABLE: [&str; 3] = [
    "tool_settings.disabled",
    "resources.disabled",
    "prompts.disabled",
];

/// Reloads on each SIGHUP for as long as the process serves: `read` loads the configuration
/// again; `running` is what it started with.
#[cfg(unix)]
pub(super) fn on_hangup(
    read: impl Fn() -> Result<Settings, ConfigError> + Send + 'static,
    running: Settings,
    runtime: Runtime,
) {
    use tokio::signal::unix::{SignalKind, signal};

    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => hangups,
        Err(error) => {
            tracing::warn!(%error, "SIGHUP cannot be heard; the configuration is read once");
            return;
        }
    };
    tokio::spawn(async move {
        let mut running = running;
        while hangups.recv().await.is_some() {
            match read() {
                Ok(read) => running = reload(&runtime, running, read),
                Err(error) => {
                    tracing::error!(%error, "SIGHUP: the configuration does not load; nothing changed");
                }
            }
        }
    });
}

/// Applies what of `read` may change while serving, reports the rest, and returns the settings
/// now in force: `running`, with the reloadable keys as `read` says.
fn reload(runtime: &Runtime, mut running: Settings, read: Settings) -> Settings {
    for key in kept(&running, &read) {
        tracing::warn!(
            key,
            "SIGHUP: `{key}` changed, but cannot change while serving; restart to apply it"
        );
    }
    running.tool_settings.disabled = read.tool_settings.disabled;
    running.resources.disabled = read.resources.disabled;
    running.prompts.disabled = read.prompts.disabled;
    let disabled = running.disabled();
    let changed = runtime
        .catalog()
        .disable_as(CONFIGURATION, disabled.clone());
    tracing::info!(
        disabled = %disabled,
        tools = changed.tools,
        resources = changed.resources,
        prompts = changed.prompts,
        "SIGHUP: configuration reloaded"
    );
    running
}

/// The keys `read` sets otherwise than `running`, of those a reload cannot apply.
fn kept(running: &Settings, read: &Settings) -> Vec<String> {
    let (Ok(running), Ok(read)) = (serde_json::to_value(running), serde_json::to_value(read))
    else {
        return Vec::new();
    };
    let mut differing = Vec::new();
    differ("", &running, &read, &mut differing);
    differing.retain(|key| !RELOADABLE.contains(&key.as_str()));
    differing
}

/// The dotted paths of the leaves where `one` and `other` differ.
fn differ(prefix: &str, one: &serde_json::Value, other: &serde_json::Value, out: &mut Vec<String>) {
    match (one.as_object(), other.as_object()) {
        (Some(one), Some(other)) => {
            for (name, value) in one {
                let key = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                let missing = serde_json::Value::Null;
                differ(&key, value, other.get(name).unwrap_or(&missing), out);
            }
        }
        _ if one != other => out.push(prefix.to_owned()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Tool, ToolSpec};

    use super::*;

    struct Receipt;

    impl Tool for Receipt {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("send_receipt", Effect::ExternalWrite);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    #[test]
    fn a_reload_applies_the_disabled_lists_and_reports_the_rest() {
        let runtime = Carmy::new().tool(Receipt).build().unwrap();
        let running = Settings::default();
        let mut read = Settings::default();
        read.tool_settings.disabled = vec!["send_*".into()];
        read.server.port = 9_999;
        read.store = Some("memory".into());
        assert_eq!(kept(&running, &read), ["server.port", "store"]);

        let now = reload(&runtime, running, read);
        assert!(runtime.catalog().get("send_receipt").is_none());
        // What cannot change is kept as it started.
        assert_eq!(now.server.port, Settings::default().server.port);
        assert_eq!(now.store, None);
        assert_eq!(now.tool_settings.disabled, ["send_*"]);

        let now = reload(&runtime, now, Settings::default());
        assert!(runtime.catalog().get("send_receipt").is_some());
        assert!(now.tool_settings.disabled.is_empty());

        // What the application disables is its own: a reload leaves it.
        let receipts = carmy_core::Disabled::parse(["send_receipt"]).unwrap();
        runtime.catalog().disable(receipts);
        reload(&runtime, now, Settings::default());
        assert!(runtime.catalog().get("send_receipt").is_none());
    }

    #[test]
    fn every_reloadable_key_is_a_setting() {
        let mut leaves = Vec::new();
        let mut changed = Settings::default();
        changed.tool_settings.disabled = vec!["a".into()];
        changed.resources.disabled = vec!["b".into()];
        changed.prompts.disabled = vec!["c".into()];
        differ(
            "",
            &serde_json::to_value(Settings::default()).unwrap(),
            &serde_json::to_value(changed).unwrap(),
            &mut leaves,
        );
        leaves.sort();
        let mut reloadable = RELOADABLE.to_vec();
        reloadable.sort_unstable();
        assert_eq!(leaves, reloadable);
    }
}
