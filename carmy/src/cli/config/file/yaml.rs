//! YAML as configuration values, from yaml-rust2's events, pulled one at a time: each alias is
//! charged the size of what it repeats against the room the bound leaves, values nest at most
//! [`MAX_DEPTH`] deep, and a key written twice is refused on the line it is written again.
//! Scalars are typed as yaml-rust2's loader types them, and converted as config-rs converts
//! its values.

use std::collections::HashMap;

use config::{Map, Value, ValueKind};
use yaml_rust2::{
    Event, Yaml,
    parser::{Parser, Tag},
    scanner::TScalarStyle,
};

use super::{MAX_DEPTH, Problem, Refused, joined};

/// The values of the YAML `text`, one document; its aliases may add `room` bytes to what it
/// holds.
pub(super) fn parse(text: &str, room: usize) -> Result<Value, Refused> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder {
        room,
        ..Builder::default()
    };
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|error| Refused::other(error.to_string()))?;
        if event == Event::StreamEnd {
            break;
        }
        builder.on(event, mark.line())?;
    }
    Ok(builder
        .root
        .unwrap_or_else(|| Value::new(None, ValueKind::Nil)))
}

/// A value and what it counts for against the bound: the bytes of its text, at least one a
/// node.
#[derive(Clone)]
struct Built {
    value: Value,
    size: usize,
}

/// A sequence or a mapping still open, at its dotted path.
enum Open {
    Sequence {
        anchor: usize,
        path: String,
        items: Vec<Value>,
        size: usize,
    },
    Mapping {
        anchor: usize,
        path: String,
        table: Map<String, Value>,
        /// The key whose value comes next, once it is read.
        key: Option<String>,
        size: usize,
    },
}

#[derive(Default)]
struct Builder {
    /// Bytes the aliases may still add.
    room: usize,
    open: Vec<Open>,
    /// Each anchored node, by the id the parser gave its anchor.
    anchors: HashMap<usize, Built>,
    root: Option<Value>,
    documents: usize,
}

impl Builder {
    fn on(&mut self, event: Event, line: usize) -> Result<(), Refused> {
        match event {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(Refused::at(
                        line,
                        Problem::Other("a second document; a configuration is one".to_owned()),
                    ));
                }
                Ok(())
            }
            Event::Scalar(text, style, anchor, tag) => {
                let size = text.len().max(1);
                let kind = scalar(text, style, tag.as_ref())
                    .map_err(|problem| Refused::at(line, Problem::Other(problem)))?;
                let value = Value::new(None, kind);
                self.close(Built { value, size }, anchor, line)
            }
            Event::SequenceStart(anchor, _) => {
                let path = self.deeper(line)?;
                self.open.push(Open::Sequence {
                    anchor,
                    path,
                    items: Vec::new(),
                    size: 1,
                });
                Ok(())
            }
            Event::MappingStart(anchor, _) => {
                let path = self.deeper(line)?;
                self.open.push(Open::Mapping {
                    anchor,
                    path,
                    table: Map::new(),
                    key: None,
                    size: 1,
                });
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (anchor, built) = match self.open.pop() {
                    Some(Open::Sequence {
                        anchor,
                        items,
                        size,
                        ..
                    }) => (anchor, (ValueKind::Array(items), size)),
                    Some(Open::Mapping {
                        anchor,
                        table,
                        size,
                        ..
                    }) => (anchor, (ValueKind::Table(table), size)),
                    // The parser balances every end with its start.
                    None => return Ok(()),
                };
                let (kind, size) = built;
                let value = Value::new(None, kind);
                self.close(Built { value, size }, anchor, line)
            }
            Event::Alias(id) => {
                let Some(built) = self.anchors.get(&id) else {
                    return Err(Refused::at(
                        line,
                        Problem::Other("an alias within the node it names".to_owned()),
                    ));
                };
                if built.size > self.room {
                    return Err(Refused::at(line, Problem::Expanded));
                }
                self.room -= built.size;
                let built = built.clone();
                self.close(built, 0, line)
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => Ok(()),
        }
    }

    /// The dotted path of a node opening one level deeper, if it may.
    fn deeper(&self, line: usize) -> Result<String, Refused> {
        if self.open.len() >= MAX_DEPTH {
            return Err(Refused::at(line, Problem::TooDeep));
        }
        Ok(match self.open.last() {
            None => String::new(),
            Some(Open::Sequence { path, .. }) => path.clone(),
            Some(Open::Mapping { path, key, .. }) => match key {
                Some(key) => joined(path, key),
                None => path.clone(),
            },
        })
    }

    /// `built` complete, on `line`: into the node that holds it, or the document.
    fn close(&mut self, built: Built, anchor: usize, line: usize) -> Result<(), Refused> {
        // Anchor ids start from 1; 0 is none.
        if anchor > 0 {
            self.anchors.insert(anchor, built.clone());
        }
        match self.open.last_mut() {
            None => {
                self.root = Some(built.value);
                Ok(())
            }
            Some(Open::Sequence { items, size, .. }) => {
                items.push(built.value);
                *size = size.saturating_add(built.size);
                Ok(())
            }
            Some(Open::Mapping {
                path,
                table,
                key,
                size,
                ..
            }) => {
                *size = size.saturating_add(built.size);
                if let Some(name) = key.take() {
                    table.insert(name, built.value);
                    return Ok(());
                }
                let Some(name) = key_name(&built.value) else {
                    return Err(Refused::at(
                        line,
                        Problem::Other("a key is text, a number or a boolean".to_owned()),
                    ));
                };
                if table.contains_key(&name) {
                    return Err(Refused::at(line, Problem::Repeated(joined(path, &name))));
                }
                *key = Some(name);
                Ok(())
            }
        }
    }
}

/// A scalar's value: quoted, text; plain, typed as yaml-rust2's loader types it (a core-schema
/// tag such as `!!str` decides, and must fit); converted as config-rs converts YAML.
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Result<ValueKind, String> {
    if style != TScalarStyle::Plain {
        return Ok(ValueKind::String(text));
    }
    let typed = match tag {
        None => Yaml::from_str(&text),
        Some(tag) if tag.handle == "tag:yaml.org,2002:" => {
            let typed = Yaml::from_str(&text);
            let fits = match tag.suffix.as_str() {
                "bool" => matches!(typed, Yaml::Boolean(_)),
                "int" => matches!(typed, Yaml::Integer(_)),
                "float" => matches!(typed, Yaml::Real(_)),
                "null" => matches!(typed, Yaml::Null),
                _ => return Ok(ValueKind::String(text)),
            };
            if !fits {
                return Err(format!("`{text}` is not a {}", tag.suffix));
            }
            typed
        }
        Some(_) => return Ok(ValueKind::String(text)),
    };
    Ok(match typed {
        Yaml::Real(real) => ValueKind::Float(
            real.parse()
                .map_err(|_| format!("`{real}`: not a number this reads"))?,
        ),
        Yaml::Integer(integer) => ValueKind::I64(integer),
        Yaml::Boolean(flag) => ValueKind::Boolean(flag),
        Yaml::String(text) => ValueKind::String(text),
        _ => ValueKind::Nil,
    })
}

/// The name a key's value gives, as config-rs names YAML keys; a key that is a list, a table or
/// null has none.
fn key_name(value: &Value) -> Option<String> {
    match &value.kind {
        ValueKind::String(text) => Some(text.clone()),
        ValueKind::I64(integer) => Some(integer.to_string()),
        ValueKind::Boolean(flag) => Some(flag.to_string()),
        ValueKind::Float(real) => Some(real.to_string()),
        _ => None,
    }
}
