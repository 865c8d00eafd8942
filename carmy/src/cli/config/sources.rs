//! The four layers of a configuration, lowest first: the defaults, the file, the environment
//! and the command line. Each is a map of values, every value tagged with where it came from
//! (`default`, the file's path, the variable's name, the flag), which errors and `config` show.

use std::ffi::OsString;

use clap::{ArgMatches, parser::ValueSource};
use config::{Map, Source, Value, ValueKind};

use super::{
    ConfigError,
    keys::{self, Shape},
    settings::{self, Settings},
};

/// The origin of the defaults.
pub(super) const DEFAULT: &str = "default";

/// Where the file is named when `--config` is not given.
pub(in crate::cli) const CONFIG_ENV: &str = "CARMY_CONFIG";

/// The most the file may hold, in bytes (`file::DEFAULT_MAX_BYTES` unset).
pub(super) const CONFIG_MAX_BYTES_ENV: &str = "CARMY_CONFIG_MAX_BYTES";

/// Read as `security.token_file` when `CARMY_SECURITY__TOKEN_FILE` is unset (its older name).
const TOKEN_FILE_ENV: &str = "CARMY_HTTP_TOKEN_FILE";

/// Read as `logging.level` when `CARMY_LOGGING__LEVEL` is unset: the usual way to filter logs.
const RUST_LOG: &str = "RUST_LOG";

/// One layer: values by dotted key.
#[derive(Debug, Clone, Default)]
pub(super) struct Layer(Map<String, Value>);

impl Source for Layer {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Map<String, Value>, config::ConfigError> {
        Ok(self.0.clone())
    }
}

impl Layer {
    fn set(&mut self, key: &str, origin: &str, kind: ValueKind) {
        self.0
            .insert(key.to_owned(), Value::new(Some(&origin.to_owned()), kind));
    }

    /// Every key's default.
    pub(super) fn defaults() -> Self {
        let mut layer = Self::default();
        let tree = serde_json::to_value(Settings::default()).expect("settings serialize");
        flatten(&mut layer, "", &tree);
        layer
    }

    /// The file's values, tagged with `origin` (its path).
    pub(super) fn file(values: Map<String, Value>, origin: &str) -> Self {
        let origin = origin.to_owned();
        Self(
            values
                .into_iter()
                .map(|(key, value)| (key, tagged(value, &origin)))
                .collect(),
        )
    }

    /// The `CARMY_<SECTION>__<KEY>` variables among `vars` (`CARMY_STORE` for the store), with
    /// lists comma-separated, and the older names [`TOKEN_FILE_ENV`] and `RUST_LOG`, as
    /// [`read_environment`] keeps them. An empty one is unset. Variables that name no section
    /// (`CARMY_CONFIG`, a test suite's own) are not configuration.
    pub(super) fn environment(vars: Vec<(String, String)>) -> Self {
        let mut layer = Self::default();
        let mut aliases = Vec::new();
        for (name, value) in vars {
            if value.is_empty() {
                continue;
            }
            match name.as_str() {
                TOKEN_FILE_ENV => aliases.push(("security.token_file", name, value)),
                RUST_LOG => aliases.push(("logging.level", name, value)),
                _ => {
                    if let Some(key) = env_key(&name) {
                        layer.set(&key, &name, env_value(&key, &value));
                    }
                }
            }
        }
        for (key, name, value) in aliases {
            if !layer.0.contains_key(key) {
                layer.set(key, &name, ValueKind::String(value));
            }
        }
        layer
    }

    /// The flags given on the command line (not their defaults), each under its key. A serving
    /// shortcut (`http`, `unix`, `mcp`) names its transport, unless `-t` is there.
    pub(super) fn flags(
        matches: &ArgMatches,
        transport: Option<settings::Transport>,
    ) -> Result<Self, ConfigError> {
        let mut layer = Self::default();
        if let Some(transport) = transport {
            layer.set(
                "server.transport",
                "the subcommand",
                ValueKind::String(transport.as_str().to_owned()),
            );
        }
        for flag in FLAGS {
            let Some(values) = given(matches, flag.id)? else {
                continue;
            };
            let origin = format!("--{}", flag.id);
            match flag.to {
                To::Key(key) => layer.set(key, &origin, flag_value(key, values)),
                To::Seconds(key) => {
                    let seconds: u64 = values[0].parse().unwrap_or(u64::MAX);
                    let millis = seconds.saturating_mul(1000);
                    layer.set(key, &origin, ValueKind::U64(millis));
                }
                To::Address => {
                    let (host, port) = split_address(&values[0]);
                    layer.set("server.host", &origin, ValueKind::String(host.to_owned()));
                    layer.set("server.port", &origin, ValueKind::String(port.to_owned()));
                }
            }
        }
        Ok(layer)
    }
}

/// The variables among `vars` that the configuration reads (those [`Layer::environment`]
/// takes, [`CONFIG_ENV`] and [`CONFIG_MAX_BYTES_ENV`]), as text. One that is not UTF-8, its
/// name or its value, is an error rather than skipped: a token file's path left out would
/// leave a server without its tokens.
pub(super) fn read_environment(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut read = Vec::new();
    for (name, value) in vars {
        let shown = name.to_string_lossy();
        let ours = matches!(
            shown.as_ref(),
            CONFIG_ENV | CONFIG_MAX_BYTES_ENV | TOKEN_FILE_ENV | RUST_LOG
        ) || env_key(&shown).is_some();
        if !ours {
            continue;
        }
        match (name.to_str(), value.into_string()) {
            (Some(name), Ok(value)) => read.push((name.to_owned(), value)),
            _ => return Err(not_text(&shown)),
        }
    }
    Ok(read)
}

/// A variable or a flag whose value is not UTF-8.
fn not_text(name: &str) -> ConfigError {
    ConfigError(format!(
        "{name}: not UTF-8, so it cannot be read; configuration values are text"
    ))
}

/// Where a flag's value goes.
enum To {
    Key(&'static str),
    /// A flag in seconds for a key in milliseconds.
    Seconds(&'static str),
    /// `--addr HOST:PORT`: `server.host` and `server.port`.
    Address,
}

struct Flag {
    id: &'static str,
    to: To,
}

const fn flag(id: &'static str, to: To) -> Flag {
    Flag { id, to }
}

/// Every flag that sets a key. A subcommand has some of them.
const FLAGS: &[Flag] = &[
    flag("transport", To::Key("server.transport")),
    flag("host", To::Key("server.host")),
    flag("port", To::Key("server.port")),
    flag("addr", To::Address),
    flag("path", To::Key("server.socket")),
    flag("grace", To::Seconds("server.grace_period_ms")),
    flag("stateless", To::Key("server.stateless")),
    flag("legacy-sse", To::Key("server.transport")),
    flag("max-connections", To::Key("server.max_connections")),
    flag("request-timeout", To::Seconds("server.timeout_ms")),
    flag("max-body-bytes", To::Key("server.max_body_bytes")),
    flag("max-sessions", To::Key("server.max_sessions")),
    flag(
        "max-sessions-per-principal",
        To::Key("server.max_sessions_per_principal"),
    ),
    flag(
        "session-idle-timeout",
        To::Seconds("server.session_idle_timeout_ms"),
    ),
    flag("stream-timeout", To::Seconds("server.stream_timeout_ms")),
    flag(
        "header-read-timeout",
        To::Seconds("server.header_read_timeout_ms"),
    ),
    flag("write-timeout", To::Seconds("server.write_timeout_ms")),
    flag("token-file", To::Key("security.token_file")),
    flag(
        "allow-unauthenticated",
        To::Key("security.allow_unauthenticated"),
    ),
    flag("allow-host", To::Key("security.allowed_hosts")),
    flag("allow-origin", To::Key("security.allowed_origins")),
    flag("principal", To::Key("security.principal")),
    flag("grant", To::Key("security.grants")),
    flag("confirm-via-client", To::Key("security.confirm_via_client")),
    flag("state-keys-file", To::Key("security.state_keys_file")),
    flag("resource-root", To::Key("resources.root_path")),
    flag("log-level", To::Key("logging.level")),
    flag("store", To::Key("store")),
];

/// The raw values of flag `id` when the command line gave it (this subcommand may not have it);
/// one that is not UTF-8 is an error.
fn given(matches: &ArgMatches, id: &str) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(raw) = matches.try_get_raw(id).ok().flatten() else {
        return Ok(None);
    };
    if matches.value_source(id) != Some(ValueSource::CommandLine) {
        return Ok(None);
    }
    raw.map(|value| {
        value
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| not_text(&format!("--{id}")))
    })
    .collect::<Result<_, _>>()
    .map(Some)
}

/// A flag's values as the value of `key`: a list for a list key; `--legacy-sse` names the
/// `sse` transport.
fn flag_value(key: &str, mut values: Vec<String>) -> ValueKind {
    if key == "server.transport" && values.first().is_some_and(|value| value == "true") {
        return ValueKind::String("sse".to_owned());
    }
    match keys::find(key).map(|key| key.shape) {
        Some(Shape::List) => ValueKind::Array(
            values
                .into_iter()
                .map(|value| Value::new(None, ValueKind::String(value)))
                .collect(),
        ),
        _ => ValueKind::String(values.swap_remove(0)),
    }
}

/// `HOST:PORT` split at its last colon (`[::1]:8080` gives `[::1]`); no colon: all host.
fn split_address(address: &str) -> (&str, &str) {
    match address.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port),
        _ => (address, ""),
    }
}

/// The key a `CARMY_...` variable sets, if it names a section.
fn env_key(name: &str) -> Option<String> {
    let rest = name.strip_prefix("CARMY_")?.to_ascii_lowercase();
    let key = rest.replace("__", ".");
    let section = key.split('.').next()?;
    keys::SECTIONS.contains(&section).then_some(key)
}

/// A variable's value for `key`: comma-separated for a list key, else the text (converted to
/// the key's type when the configuration is read).
fn env_value(key: &str, value: &str) -> ValueKind {
    match keys::find(key).map(|key| key.shape) {
        Some(Shape::List) => ValueKind::Array(
            value
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::new(None, ValueKind::String(item.to_owned())))
                .collect(),
        ),
        _ => ValueKind::String(value.to_owned()),
    }
}

/// `value` and everything in it tagged with `origin`.
fn tagged(value: Value, origin: &String) -> Value {
    let kind = match value.kind {
        ValueKind::Table(table) => ValueKind::Table(
            table
                .into_iter()
                .map(|(key, value)| (key, tagged(value, origin)))
                .collect(),
        ),
        ValueKind::Array(items) => {
            ValueKind::Array(items.into_iter().map(|item| tagged(item, origin)).collect())
        }
        other => other,
    };
    Value::new(Some(origin), kind)
}

/// The leaves of `tree` under `prefix` into `layer`, tagged as defaults; `null` (unset) is left
/// out.
fn flatten(layer: &mut Layer, prefix: &str, tree: &serde_json::Value) {
    use serde_json::Value as Json;
    let kind = match tree {
        Json::Object(fields) => {
            for (name, value) in fields {
                let key = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                flatten(layer, &key, value);
            }
            return;
        }
        Json::Null => return,
        Json::Bool(value) => ValueKind::Boolean(*value),
        Json::Number(number) => match number.as_u64() {
            Some(value) => ValueKind::U64(value),
            None => ValueKind::I64(number.as_i64().unwrap_or_default()),
        },
        Json::String(text) => ValueKind::String(text.clone()),
        Json::Array(items) => ValueKind::Array(
            items
                .iter()
                .filter_map(|item| item.as_str())
                .map(|item| Value::new(None, ValueKind::String(item.to_owned())))
                .collect(),
        ),
    };
    layer.set(prefix, DEFAULT, kind);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_name_a_section_and_a_key() {
        assert_eq!(
            env_key("CARMY_SERVER__PORT").as_deref(),
            Some("server.port")
        );
        assert_eq!(
            env_key("CARMY_SECURITY__ALLOWED_ORIGINS").as_deref(),
            Some("security.allowed_origins")
        );
        assert_eq!(env_key("CARMY_STORE").as_deref(), Some("store"));
        // Not configuration: the file's own variable, a test suite's, another program's.
        assert_eq!(env_key("CARMY_CONFIG"), None);
        assert_eq!(env_key("CARMY_TEST_SERVERS"), None);
        assert_eq!(env_key("SERVER__PORT"), None);
    }

    #[test]
    fn addresses_split_at_the_port() {
        assert_eq!(split_address("127.0.0.1:8080"), ("127.0.0.1", "8080"));
        assert_eq!(split_address("[::1]:0"), ("[::1]", "0"));
        assert_eq!(split_address("[::1]"), ("[::1]", ""));
        assert_eq!(split_address("localhost"), ("localhost", ""));
    }
}
