//! The configuration file: read up to a bound, then parsed once into the values of its layer.
//!
//! JSON and YAML are parsed here rather than by config-rs, because the parsers it calls lose
//! what a file says without a word or cannot be bounded: serde_json's maps keep the last of two
//! equal keys (a second `security` section dropped the first one's token file), and
//! yaml-rust2's loader copies a node for each alias to it (a few hundred bytes of aliases to
//! aliases expand to gigabytes) and nests as deep as the text does (the conversion after it
//! overflowed the stack). TOML refuses a key written twice by its specification, and has no
//! aliases: config-rs reads it.
//!
//! config-rs reads a top-level key as a path (`security.token_file` is `token_file` in
//! `security`): such keys are nested here, and one that meets a key written otherwise is
//! refused as written twice too, rather than merged with one of the values lost.

mod json;
mod yaml;

use std::{io::Read, path::Path};

use config::{FileFormat, Map, Value, ValueKind};

/// The most a configuration file may hold, in bytes, unless `CARMY_CONFIG_MAX_BYTES` says
/// otherwise; YAML aliases may not make it mean more.
pub(super) const DEFAULT_MAX_BYTES: u64 = 256 * 1024;

/// The configuration file, as read.
#[derive(Debug)]
pub(super) struct File {
    /// Its path as given: the origin of its values.
    pub(super) path: String,
    pub(super) format: FileFormat,
    pub(super) text: String,
}

/// Why a file's values cannot be read, and the line (from 1) where, when known.
#[derive(Debug, PartialEq)]
pub(super) struct Refused {
    pub(super) line: Option<usize>,
    pub(super) problem: Problem,
}

#[derive(Debug, PartialEq)]
pub(super) enum Problem {
    /// The key at this dotted path is written twice.
    Repeated(String),
    /// YAML aliases that would make the file mean more than the bound.
    Expanded,
    /// Values nested past [`MAX_DEPTH`].
    TooDeep,
    /// A top-level key config-rs would read as something no key is (`grants[0]`).
    NotAKey(String),
    /// Anything else the parsers say.
    Other(String),
}

/// How deep values may nest: serde_json's bound on JSON, held to YAML too.
pub(super) const MAX_DEPTH: usize = 128;

impl Refused {
    fn at(line: usize, problem: Problem) -> Self {
        Self {
            line: Some(line),
            problem,
        }
    }

    fn other(problem: impl Into<String>) -> Self {
        Self {
            line: None,
            problem: Problem::Other(problem.into()),
        }
    }
}

/// Why the file at a path cannot be read at all.
#[derive(Debug)]
pub(super) enum Unread {
    /// Its extension names none of the formats.
    Format,
    TooLarge,
    Io(std::io::Error),
    NotText,
}

impl File {
    /// Reads the file at `path`, at most `max_bytes` of it (a larger one, `/dev/zero` named
    /// `zero.yaml`, is refused without being read past the bound), its format by its
    /// extension.
    pub(super) fn read(path: &str, max_bytes: u64) -> Result<Self, Unread> {
        let extension = Path::new(path)
            .extension()
            .and_then(|extension| extension.to_str())
            .map(str::to_ascii_lowercase);
        let format = match extension.as_deref() {
            Some("toml") => FileFormat::Toml,
            Some("yaml" | "yml") => FileFormat::Yaml,
            Some("json") => FileFormat::Json,
            _ => return Err(Unread::Format),
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| {
                file.take(max_bytes.saturating_add(1))
                    .read_to_end(&mut bytes)
            })
            .map_err(Unread::Io)?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
            return Err(Unread::TooLarge);
        }
        let text = String::from_utf8(bytes).map_err(|_| Unread::NotText)?;
        Ok(Self {
            path: path.to_owned(),
            format,
            text,
        })
    }

    /// Its values, top-level dotted keys nested; nothing tagged with its origin yet. The YAML
    /// aliases may add to what the file holds up to `max_bytes` in all.
    pub(super) fn values(&self, max_bytes: u64) -> Result<Map<String, Value>, Refused> {
        let root = match self.format {
            FileFormat::Json => json::parse(&self.text)?,
            FileFormat::Yaml => {
                let room = usize::try_from(max_bytes)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(self.text.len());
                yaml::parse(&self.text, room)?
            }
            _ => Value::new(
                None,
                ValueKind::Table(
                    config::Source::collect(&config::File::from_str(&self.text, self.format))
                        .map_err(|error| Refused::other(parse_error(&error)))?,
                ),
            ),
        };
        let top = match root.kind {
            ValueKind::Table(top) => top,
            // An empty document says nothing.
            ValueKind::Nil => Map::new(),
            _ => {
                return Err(Refused::other(
                    "the file is not a table of keys at its top level",
                ));
            }
        };
        nest(top)
    }
}

/// A parse error without config-rs's wrapping.
fn parse_error(error: &config::ConfigError) -> String {
    match error {
        config::ConfigError::FileParse { cause, .. } => cause.to_string().trim_end().to_owned(),
        other => other.to_string(),
    }
}

/// The top-level keys nested at their dots, as config-rs would read them.
fn nest(top: Map<String, Value>) -> Result<Map<String, Value>, Refused> {
    let mut nested = Map::new();
    for (key, value) in top {
        if key.contains(['[', ']']) {
            return Err(Refused {
                line: None,
                problem: Problem::NotAKey(key),
            });
        }
        // config-rs reads a key as a path only if each of its parts is a name.
        let is_path = key
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(is_name_byte));
        let (parents, last) = match key.rsplit_once('.') {
            Some((parents, last)) if is_path => (Some(parents), last),
            _ => (None, key.as_str()),
        };
        let mut table = &mut nested;
        let mut path = String::new();
        for part in parents.into_iter().flat_map(|parents| parents.split('.')) {
            path = joined(&path, part);
            let entry = table
                .entry(part.to_owned())
                .or_insert_with(|| Value::new(None, ValueKind::Table(Map::new())));
            match &mut entry.kind {
                ValueKind::Table(inner) => table = inner,
                _ => return Err(repeated(path)),
            }
        }
        merge(table, &path, last.to_owned(), value)?;
    }
    Ok(nested)
}

/// The bytes of a name in a config-rs path.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// `value` as `name` in `table` (at `path`): tables merge, anything else there already is a
/// key written twice.
fn merge(
    table: &mut Map<String, Value>,
    path: &str,
    name: String,
    value: Value,
) -> Result<(), Refused> {
    let here = joined(path, &name);
    let Some(existing) = table.get_mut(&name) else {
        table.insert(name, value);
        return Ok(());
    };
    match (&mut existing.kind, value.kind) {
        (ValueKind::Table(existing), ValueKind::Table(incoming)) => {
            for (name, value) in incoming {
                merge(existing, &here, name, value)?;
            }
            Ok(())
        }
        _ => Err(repeated(here)),
    }
}

fn repeated(key: String) -> Refused {
    Refused {
        line: None,
        problem: Problem::Repeated(key),
    }
}

/// `name` under the dotted `path`.
fn joined(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values config-rs reads from `text`.
    fn config_rs(text: &str, format: FileFormat) -> Map<String, Value> {
        config::Source::collect(&config::File::from_str(text, format)).expect("config-rs reads it")
    }

    fn ours(text: &str, format: FileFormat) -> Map<String, Value> {
        let root = match format {
            FileFormat::Json => json::parse(text),
            _ => yaml::parse(text, usize::MAX),
        };
        match root.expect("read").kind {
            ValueKind::Table(table) => table,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_and_yaml_read_as_config_rs_reads_them() {
        let yaml = "\
text: plain words
quoted: \"8080\"
single: 'it''s'
integer: 42
negative: -7
hex: 0x1F
octal: 0o17
plus: +5
real: 1.5
exponent: 1e3
yes: true
capital: True
no: FALSE
nothing: ~
empty:
tagged: !!str 5
int: !!int 7
block: |
  two
  lines
folded: >
  one
  line
list: [a, 1, 2.5, false, null]
tables:
  - name: first
    port: 1
  - {name: second, port: 2}
nested:
  deeper:
    deepest: value
3: three
true: yes
";
        assert_eq!(
            ours(yaml, FileFormat::Yaml),
            config_rs(yaml, FileFormat::Yaml)
        );
        let json = r#"{
            "text": "plain \u00e9 \ud83d\ude00", "integer": 42, "negative": -7,
            "big": 18446744073709551615, "real": 1.5, "yes": true,
            "nothing": null, "list": ["a", 1, 2.5, false, null, {"in": "list"}],
            "nested": {"deeper": {"deepest": "value"}}, "empty": {}
        }"#;
        assert_eq!(
            ours(json, FileFormat::Json),
            config_rs(json, FileFormat::Json)
        );
    }

    #[test]
    fn a_top_level_dotted_key_is_nested_as_config_rs_nests_it() {
        let read = |text: &str| {
            File {
                path: "x.yaml".to_owned(),
                format: FileFormat::Yaml,
                text: text.to_owned(),
            }
            .values(DEFAULT_MAX_BYTES)
        };
        let nested =
            read("server.port: 1\nserver:\n  host: h\nlogging.level: info\n").expect("read");
        let server = match &nested["server"].kind {
            ValueKind::Table(server) => server,
            other => panic!("{other:?}"),
        };
        assert_eq!(server["port"].kind, ValueKind::I64(1));
        assert_eq!(server["host"].kind, ValueKind::String("h".to_owned()));
        assert!(nested.contains_key("logging"));
        // Dotted twice over, or once dotted and once within a table.
        for text in [
            "server.port: 1\nserver:\n  port: 2\n",
            "server:\n  port: 2\nserver.port: 1\n",
            "server: 1\nserver.port: 2\n",
        ] {
            let refused = read(text).expect_err(text).problem;
            assert!(
                matches!(&refused, Problem::Repeated(key) if key.starts_with("server")),
                "{text}: {refused:?}"
            );
        }
        // An index is not a key: config-rs would read it as one, into a list.
        assert_eq!(
            read("server[0]: 1\n").expect_err("refused").problem,
            Problem::NotAKey("server[0]".to_owned())
        );
    }
}
