//! JSON as configuration values, with serde_json's parser and a key written twice refused
//! (serde_json's own maps keep the last of two equal keys).

use std::{cell::RefCell, fmt};

use config::{Map, Value, ValueKind};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{Problem, Refused, joined};

/// The values of the JSON `text`. Nesting is bounded by serde_json.
pub(super) fn parse(text: &str) -> Result<Value, Refused> {
    // The key written twice, told apart from serde_json's own errors, which carry its place.
    let repeated = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Node {
        path: "",
        repeated: &repeated,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|error| match repeated.into_inner() {
        Some(key) => Refused::at(error.line(), Problem::Repeated(key)),
        None => Refused::other(error.to_string()),
    })
}

/// A value at the dotted `path`.
struct Node<'a> {
    path: &'a str,
    repeated: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn value(kind: ValueKind) -> Value {
    Value::new(None, kind)
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Value, E> {
        Ok(value(ValueKind::Boolean(flag)))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Value, E> {
        Ok(value(ValueKind::I64(number)))
    }

    // As config-rs reads JSON: a signed integer while it fits.
    fn visit_u64<E>(self, number: u64) -> Result<Value, E> {
        Ok(value(match i64::try_from(number) {
            Ok(signed) => ValueKind::I64(signed),
            Err(_) => ValueKind::U64(number),
        }))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Value, E> {
        Ok(value(ValueKind::Float(number)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Value, E> {
        Ok(value(ValueKind::String(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Value, E> {
        Ok(value(ValueKind::String(text)))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(value(ValueKind::Nil))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut list = Vec::new();
        while let Some(item) = items.next_element_seed(Node {
            path: self.path,
            repeated: self.repeated,
        })? {
            list.push(item);
        }
        Ok(value(ValueKind::Array(list)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut table = Map::new();
        while let Some(name) = entries.next_key::<String>()? {
            let path = joined(self.path, &name);
            if table.contains_key(&name) {
                *self.repeated.borrow_mut() = Some(path);
                return Err(de::Error::custom("a key written twice"));
            }
            let item = entries.next_value_seed(Node {
                path: &path,
                repeated: self.repeated,
            })?;
            table.insert(name, item);
        }
        Ok(value(ValueKind::Table(table)))
    }
}
