//! One configuration for a serving command line, from four layers: the command line's flags
//! over the environment (`CARMY_SERVER__PORT`) over a file (`--config FILE` or `$CARMY_CONFIG`:
//! TOML, YAML or JSON by its extension) over the defaults. config-rs merges the layers and
//! converts the values; an unknown key or a bad value is an error naming the key, the value and
//! where it was written (the file and line, the variable, the flag), before anything starts.

mod file;
mod keys;
mod locate;
mod oauth;
mod settings;
mod show;
mod sources;

use std::fmt;

use clap::ArgMatches;
use config::{Config, Value};

#[cfg(test)]
pub(super) use settings::Rate;
#[cfg(feature = "store")]
pub(super) use settings::RequestIds;
pub(super) use settings::{LogFormat, Logging, Settings, ToolSettings, Transport};
pub(super) use show::{print, reference};
pub(super) use sources::CONFIG_ENV;

use file::{File, Problem, Refused, Unread};
use sources::{CONFIG_MAX_BYTES_ENV, Layer};

/// A configuration that cannot be used: the message says what, and where.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::cli) struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// An effective configuration, with the merged values it was read from (for `config`).
#[derive(Debug)]
pub(in crate::cli) struct Loaded {
    pub(super) settings: Settings,
    merged: Merged,
}

/// The merged values, each still tagged with its origin.
#[derive(Debug)]
struct Merged(config::Map<String, Value>);

impl Merged {
    /// The value at the dotted `key`, if any layer set it.
    fn get(&self, key: &str) -> Option<&Value> {
        let mut segments = key.split('.');
        let mut value = self.0.get(segments.next()?)?;
        for segment in segments {
            match &value.kind {
                config::ValueKind::Table(table) => value = table.get(segment)?,
                _ => return None,
            }
        }
        Some(value)
    }
}

/// The configuration of a serving subcommand: its flags (`matches`), the environment (`vars`)
/// and the file they name. `transport` is the one a shortcut (`mcp`, `http`, `unix`) implies.
pub(super) fn load(
    matches: &ArgMatches,
    transport: Option<Transport>,
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Loaded, ConfigError> {
    let vars = sources::read_environment(vars)?;
    let var = |name: &str| {
        vars.iter()
            .find(|(variable, _)| variable == name)
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.is_empty())
    };
    let max_bytes = match var(CONFIG_MAX_BYTES_ENV) {
        None => file::DEFAULT_MAX_BYTES,
        Some(text) => text
            .parse::<u64>()
            .ok()
            .filter(|bytes| *bytes > 0)
            .ok_or_else(|| {
                ConfigError(format!(
                    "{CONFIG_MAX_BYTES_ENV}: {text:?}: expected a number of bytes, at least 1"
                ))
            })?,
    };
    let named = matches
        .try_get_raw("config")
        .ok()
        .flatten()
        .and_then(|mut raw| raw.next())
        .map(|path| path.to_string_lossy().into_owned())
        .or_else(|| var(CONFIG_ENV).map(str::to_owned));
    let file = named.map(|path| read(&path, max_bytes)).transpose()?;

    let mut builder = Config::builder().add_source(Layer::defaults());
    if let Some(file) = &file {
        let values = file
            .values(max_bytes)
            .map_err(|refused| refusal(file, refused, max_bytes))?;
        builder = builder.add_source(Layer::file(values, &file.path));
    }
    let merged = builder
        .add_source(Layer::environment(vars))
        .add_source(Layer::flags(matches, transport)?)
        .build()
        .map_err(|error| ConfigError(error.to_string()))?;

    let mut unknown = Vec::new();
    let read = serde_ignored::deserialize(merged.clone(), |path| unknown.push(path.to_string()));
    let merged =
        Merged(config::Source::collect(&merged).map_err(|error| ConfigError(error.to_string()))?);
    if !unknown.is_empty() {
        let lines: Vec<String> = unknown
            .iter()
            .map(|key| describe(&merged, file.as_ref(), key, &unknown_key(key)))
            .collect();
        return Err(ConfigError(lines.join("\n")));
    }
    let settings: Settings = read.map_err(|error| bad_value(&merged, file.as_ref(), &error))?;
    validate(&settings, &merged, file.as_ref())?;
    Ok(Loaded { settings, merged })
}

/// Reads the file at `path`, at most `max_bytes` of it.
fn read(path: &str, max_bytes: u64) -> Result<File, ConfigError> {
    File::read(path, max_bytes).map_err(|unread| {
        ConfigError(match unread {
            Unread::Format => format!(
                "{path}: a configuration file is TOML, YAML or JSON, named by its extension \
                 (.toml, .yaml, .yml, .json)"
            ),
            Unread::TooLarge => format!(
                "{path}: larger than {max_bytes} bytes, the most a configuration file may hold \
                 ({CONFIG_MAX_BYTES_ENV})"
            ),
            Unread::Io(error) => format!("{path}: cannot read the configuration: {error}"),
            Unread::NotText => {
                format!("{path}: cannot read the configuration: it is not UTF-8 text")
            }
        })
    })
}

/// `WHERE: PROBLEM` for a file whose values cannot be read.
fn refusal(file: &File, refused: Refused, max_bytes: u64) -> ConfigError {
    let line = refused.line.or_else(|| match &refused.problem {
        Problem::Repeated(key) | Problem::NotAKey(key) => {
            locate::line(&file.text, file.format, key)
        }
        _ => None,
    });
    let problem = match refused.problem {
        Problem::Repeated(key) => format!("{key}: written twice; each key may appear once"),
        Problem::Expanded => format!(
            "its aliases expand the file past {max_bytes} bytes, the most a configuration file \
             may hold ({CONFIG_MAX_BYTES_ENV})"
        ),
        Problem::TooDeep => format!("nested deeper than {} levels", file::MAX_DEPTH),
        Problem::NotAKey(key) => format!("{key}: {}", unknown_key(&key)),
        Problem::Other(problem) => problem,
    };
    ConfigError(match line {
        Some(line) => format!("{}:{line}: {problem}", file.path),
        None => format!("{}: {problem}", file.path),
    })
}

/// `WHERE: KEY = VALUE: PROBLEM`, where is the file and line, the variable or the flag.
fn describe(merged: &Merged, file: Option<&File>, key: &str, problem: &str) -> String {
    let value = merged.get(key);
    let origin = value.and_then(origin_of).unwrap_or("?");
    let place = match file {
        Some(file) if file.path == origin => match locate::line(&file.text, file.format, key) {
            Some(line) => format!("{origin}:{line}"),
            None => origin.to_owned(),
        },
        _ => origin.to_owned(),
    };
    match value {
        Some(value) => format!("{place}: {key} = {}: {problem}", shown(value)),
        // Unset: there is no place to name.
        None => format!("{key}: {problem}"),
    }
}

/// Where `value` came from; a table merged from layers is said to come from its first value's.
fn origin_of(value: &Value) -> Option<&str> {
    value.origin().or_else(|| match &value.kind {
        config::ValueKind::Table(table) => table.values().find_map(origin_of),
        config::ValueKind::Array(items) => items.iter().find_map(origin_of),
        _ => None,
    })
}

/// A value as written, quoted when it is text; any password in it hidden.
fn shown(value: &Value) -> String {
    match &value.kind {
        config::ValueKind::String(text) => format!("{:?}", super::redact::redacted(text)),
        config::ValueKind::Table(_) => "a table".to_owned(),
        config::ValueKind::Array(items) => format!(
            "[{}]",
            items.iter().map(shown).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn unknown_key(key: &str) -> String {
    match key.split_once('.') {
        Some((section, _)) if keys::SECTIONS.contains(&section) => {
            let known: Vec<&str> = keys::KEYS
                .iter()
                .filter_map(|known| known.path.strip_prefix(section)?.strip_prefix('.'))
                .collect();
            format!("unknown key; [{section}] has {}", known.join(", "))
        }
        _ => format!(
            "unknown key; the sections are {}",
            keys::SECTIONS.join(", ")
        ),
    }
}

/// A value config-rs could not convert, said with its key and origin.
fn bad_value(merged: &Merged, file: Option<&File>, error: &config::ConfigError) -> ConfigError {
    let (key, problem) = match error {
        config::ConfigError::Type {
            key: Some(key),
            expected,
            ..
        } => (key.clone(), format!("expected {expected}")),
        config::ConfigError::At {
            key: Some(key),
            error,
            ..
        } => match keys::find(key).filter(|known| !known.choices.is_empty()) {
            Some(known) => (
                key.clone(),
                format!("expected one of {}", known.choices.join(", ")),
            ),
            None => (key.clone(), error.to_string()),
        },
        other => return ConfigError(other.to_string()),
    };
    ConfigError(describe(merged, file, &key, &problem))
}

/// What types alone do not check.
fn validate(settings: &Settings, merged: &Merged, file: Option<&File>) -> Result<(), ConfigError> {
    if let Err(error) = tracing_subscriber::EnvFilter::try_new(&settings.logging.level) {
        return Err(ConfigError(describe(
            merged,
            file,
            "logging.level",
            &format!("not a level or filter directives: {error}"),
        )));
    }
    let rates = [
        ("security.rate_limit", settings.security.rate_limit),
        (
            "tool_settings.rate_limit",
            settings.tool_settings.rate_limit,
        ),
    ];
    for (section, rate) in rates {
        let problem = match (rate.requests_per_minute, rate.burst_size) {
            (Some(0), _) => Some((
                "requests_per_minute",
                "at least 1; leave it unset for no limit",
            )),
            (_, Some(0)) => Some(("burst_size", "at least 1")),
            (None, Some(_)) => Some(("burst_size", "a burst needs `requests_per_minute` too")),
            _ => None,
        };
        if let Some((key, problem)) = problem {
            let key = format!("{section}.{key}");
            return Err(ConfigError(describe(merged, file, &key, problem)));
        }
    }
    let rule_lists = [
        (
            "tool_settings.allowed_tools",
            &settings.tool_settings.allowed_tools,
        ),
        (
            "tool_settings.require_confirmation",
            &settings.tool_settings.require_confirmation,
        ),
    ];
    for (key, rules) in rule_lists {
        if let Some(rules) = rules
            && let Err(error) = carmy_core::Access::parse(rules)
        {
            return Err(ConfigError(describe(merged, file, key, &error.to_string())));
        }
    }
    for (key, rules, kind) in settings.disabled_lists() {
        let spelled = rules.iter().map(|rule| format!("{kind}{rule}"));
        let problem = match carmy_core::Disabled::parse(spelled) {
            Err(error) => Some(error.to_string()),
            // A rule of another kind belongs in that kind's list.
            Ok(_) if kind.is_empty() => rules
                .iter()
                .find(|rule| rule.starts_with("resource:") || rule.starts_with("prompt:"))
                .map(|rule| {
                    format!("`{rule}`: only tools; resources and prompts have their own `disabled`")
                }),
            Ok(_) => None,
        };
        if let Some(problem) = problem {
            return Err(ConfigError(describe(merged, file, key, &problem)));
        }
    }
    if let Some(rules) = &settings.tool_settings.require_confirmation
        && let Some(rule) = rules
            .iter()
            .find(|rule| rule.starts_with("resource:") || rule.starts_with("prompt:"))
    {
        let key = "tool_settings.require_confirmation";
        let problem = format!("`{rule}`: only tools are confirmed");
        return Err(ConfigError(describe(merged, file, key, &problem)));
    }
    if let Err((key, problem)) = settings
        .security
        .oauth
        .build(settings.security.token_file.is_some())
    {
        return Err(ConfigError(describe(merged, file, key, &problem)));
    }
    if settings.tool_settings.max_execution_time_ms == Some(0) {
        let key = "tool_settings.max_execution_time_ms";
        return Err(ConfigError(describe(merged, file, key, "at least 1")));
    }
    if let Some((key, _)) = settings
        .request_ids
        .set()
        .into_iter()
        .find(|(_, value)| *value == 0)
    {
        return Err(ConfigError(describe(merged, file, key, "at least 1")));
    }
    if settings.tool_settings.max_result_bytes == Some(0) {
        let key = "tool_settings.max_result_bytes";
        return Err(ConfigError(describe(merged, file, key, "at least 1")));
    }
    Ok(())
}

impl Loaded {
    /// Where `key`'s value came from: `default`, a file, a variable, a flag.
    fn origin(&self, key: &str) -> String {
        self.merged
            .get(key)
            .and_then(|value| origin_of(value).map(str::to_owned))
            .unwrap_or_else(|| sources::DEFAULT.to_owned())
    }
}

#[cfg(test)]
mod tests;
