//! The one pass over a JSON-RPC body that builds nothing: which of the four messages it is by
//! rmcp's own rule, its id and method, and a call's tool. A differential test against rmcp's
//! parser (below) keeps the two in step.

use std::{borrow::Cow, fmt};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, NumberOrString, RequestId};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess};

/// Whether rmcp reads this `initialize` as one (it reads one with missing or malformed params
/// as a custom request, which opens no session). Once per session: parsed in full.
pub(super) fn opens_session(bytes: &[u8]) -> bool {
    matches!(
        serde_json::from_slice::<ClientJsonRpcMessage>(bytes),
        Ok(ClientJsonRpcMessage::Request(request))
            if matches!(request.request, ClientRequest::InitializeRequest(_))
    )
}

/// What of a JSON-RPC message decides whether rmcp reads it, and as which message, read
/// without building it: the members that tell the four messages apart, and the shape of
/// `params` (an object, or null) and `error` (an integer `code`, a string `message`). What
/// `params` hold is each method's own: rmcp reads params it does not understand as a custom
/// request rather than refuse them; only a string `params.name` is kept, a call's tool.
#[derive(Debug, Default)]
pub(super) struct Envelope<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    pub(super) method: Option<Cow<'a, str>>,
    /// `Some(None)` for `"id": null`.
    pub(super) id: Option<Option<RequestId>>,
    result: bool,
    error: bool,
    /// `params.name`, when a string.
    pub(super) tool: Option<Cow<'a, str>>,
}

/// The four messages JSON-RPC has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Request,
    Notification,
    Response,
    Error,
}

impl Envelope<'_> {
    /// How long the id is, as a string; 0 for a number.
    pub(super) fn id_len(&self) -> usize {
        match &self.id {
            Some(Some(NumberOrString::String(id))) => id.len(),
            _ => 0,
        }
    }

    /// Which message this is, by rmcp's rule (`JsonRpcMessageShape` in its `model.rs`): the
    /// members present decide; or what is wrong with it.
    pub(super) fn kind(&self) -> Result<Kind, &'static str> {
        if self.jsonrpc.as_deref() != Some("2.0") {
            return Err(r#"`jsonrpc` must be "2.0""#);
        }
        let kind = match (
            self.method.is_some(),
            self.id.is_some(),
            self.result,
            self.error,
        ) {
            (true, true, false, false) => Kind::Request,
            (true, false, false, false) => Kind::Notification,
            (false, _, true, false) => Kind::Response,
            (false, _, false, true) => Kind::Error,
            _ => {
                return Err(
                    "not a request, notification, response or error: the members `method`, \
                     `id`, `result` and `error` do not fit any",
                );
            }
        };
        // Only an error may answer a request whose id could not be read.
        if matches!(kind, Kind::Request | Kind::Response) && !matches!(self.id, Some(Some(_))) {
            return Err("`id` must be a string or an integer");
        }
        Ok(kind)
    }
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;

        impl<'de> de::Visitor<'de> for Members {
            type Value = Envelope<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message (an object)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
                let mut envelope = Envelope::default();
                let mut seen = [false; 6];
                while let Some(member) = map.next_key::<Member>()? {
                    if let Some(index) = member.index()
                        && std::mem::replace(&mut seen[index], true)
                    {
                        return Err(de::Error::custom(format_args!(
                            "duplicate member `{}`",
                            member.name()
                        )));
                    }
                    match member {
                        Member::Jsonrpc => {
                            envelope.jsonrpc = Some(map.next_value::<Text<'de>>()?.0)
                        }
                        Member::Method => envelope.method = Some(map.next_value::<Text<'de>>()?.0),
                        Member::Id => envelope.id = Some(map.next_value()?),
                        Member::Result => {
                            map.next_value::<IgnoredAny>()?;
                            envelope.result = true;
                        }
                        Member::Error => {
                            map.next_value::<ErrorShape>()?;
                            envelope.error = true;
                        }
                        Member::Params => envelope.tool = map.next_value::<ParamsShape<'de>>()?.0,
                        Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(envelope)
            }
        }

        deserializer.deserialize_map(Members)
    }
}

/// A member's name, matched without allocating.
#[derive(Clone, Copy, serde::Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Jsonrpc,
    Method,
    Id,
    Result,
    Error,
    Params,
    #[serde(other)]
    Other,
}

impl Member {
    fn index(self) -> Option<usize> {
        match self {
            Self::Jsonrpc => Some(0),
            Self::Method => Some(1),
            Self::Id => Some(2),
            Self::Result => Some(3),
            Self::Error => Some(4),
            Self::Params => Some(5),
            Self::Other => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Jsonrpc => "jsonrpc",
            Self::Method => "method",
            Self::Id => "id",
            Self::Result => "result",
            Self::Error => "error",
            Self::Params => "params",
            Self::Other => "",
        }
    }
}

/// `params`: an object, or null; of its members only `name` is kept, when it is a string (the
/// first, if named twice).
struct ParamsShape<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for ParamsShape<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = ParamsShape<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`params` as an object")
            }

            fn visit_unit<E: de::Error>(self) -> Result<ParamsShape<'de>, E> {
                Ok(ParamsShape(None))
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ParamsShape<'de>, A::Error> {
                let mut name = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if key.0 == "name" && name.is_none() {
                        name = map.next_value::<MaybeText<'de>>()?.0;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ParamsShape(name))
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

/// Any value, kept when it is a string.
struct MaybeText<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for MaybeText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = MaybeText<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeText(Some(Cow::Borrowed(text))))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(MaybeText(Some(Cow::Owned(text.to_owned()))))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeText(None))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeText(None))
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

/// `error`: what rmcp's `ErrorData` needs.
#[derive(serde::Deserialize)]
struct ErrorShape {
    #[serde(rename = "code")]
    _code: i32,
    #[serde(rename = "message")]
    _message: AnyString,
}

/// Any string, looked at and dropped.
struct AnyString;

impl<'de> Deserialize<'de> for AnyString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl de::Visitor<'_> for Visitor {
            type Value = AnyString;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<AnyString, E> {
                Ok(AnyString)
            }
        }

        deserializer.deserialize_str(Visitor)
    }
}

/// A string, borrowed from the body unless it has escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }

        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`read`] makes of `body`: a message (and whether it opens a session), or not.
    fn ours(body: &str) -> Option<bool> {
        let envelope = serde_json::from_slice::<Envelope<'_>>(body.as_bytes()).ok()?;
        let kind = envelope.kind().ok()?;
        Some(
            kind == Kind::Request
                && envelope.method.as_deref() == Some("initialize")
                && opens_session(body.as_bytes()),
        )
    }

    /// What rmcp makes of it.
    fn rmcp(body: &str) -> Option<bool> {
        match serde_json::from_str::<ClientJsonRpcMessage>(body).ok()? {
            ClientJsonRpcMessage::Request(request) => Some(matches!(
                request.request,
                ClientRequest::InitializeRequest(_)
            )),
            _ => Some(false),
        }
    }

    const INITIALIZE_PARAMS: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}"#;

    #[test]
    fn the_envelope_agrees_with_rmcps_parser() {
        let initialize = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{INITIALIZE_PARAMS}}}"#
        );
        let escaped = format!(
            r#"{{"jsonrpc":"2\u002e0","id":"x","method":"initi\u0061lize","params":{INITIALIZE_PARAMS}}}"#
        );
        let reordered = format!(
            r#"{{"params":{INITIALIZE_PARAMS},"method":"initialize","id":2,"jsonrpc":"2.0"}}"#
        );
        let corpus: Vec<&str> = vec![
            &initialize,
            &escaped,
            &reordered,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"vendor/anything","params":{"a":[1,{"b":null}]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
            r#"{"jsonrpc":"2.0","method":"vendor/notice","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"s","result":{"action":"accept","content":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
            r#"  {"jsonrpc":"2.0","method":"notifications/initialized"}  "#,
            // Not messages.
            "",
            "not json",
            r#"{"jsonrpc":"2.0","id":1,"method":"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"} trailing"#,
            "[1,2,3]",
            r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
            r#""a string""#,
            "5",
            "null",
            "{}",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","hello":"world"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"ping","error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"jsonrpc":"2.0","method":null,"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"vendor/x","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"vendor/x","params":[1]}"#,
            r#"{"jsonrpc":"2.0","method":"vendor/n","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":"x"}"#,
        ];
        let mut disagreements = Vec::new();
        for body in &corpus {
            let (ours, rmcp) = (ours(body), rmcp(body));
            if ours != rmcp {
                disagreements.push(format!("{body}: ours {ours:?}, rmcp {rmcp:?}"));
            }
        }
        assert!(disagreements.is_empty(), "{disagreements:#?}");
    }
}
