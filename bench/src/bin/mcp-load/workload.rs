//! What the measured requests are: the tool call every contender answers, or a resource read.

use serde_json::{Value, json};

use crate::check;

/// The request a contender is sent, over and over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `tools/call search_products {"query":"mouse"}`, answered with 4 products.
    Search,
    /// `resources/read` of this URI, answered with its contents.
    Read(String),
}

impl Workload {
    /// `search`, or `read:URI`.
    pub(crate) fn parse(spec: &str) -> Result<Self, String> {
        if spec == "search" {
            return Ok(Self::Search);
        }
        match spec.strip_prefix("read:") {
            Some(uri) if !uri.is_empty() => Ok(Self::Read(uri.to_owned())),
            _ => Err(format!(
                "--workload takes `search` or `read:URI`, not `{spec}`"
            )),
        }
    }

    /// The JSON-RPC method and params of one request.
    pub(crate) fn request(&self) -> (&'static str, Value) {
        match self {
            Self::Search => {
                let arguments: Value =
                    serde_json::from_str(check::ARGUMENTS).expect("valid arguments");
                (
                    "tools/call",
                    json!({ "name": "search_products", "arguments": arguments }),
                )
            }
            Self::Read(uri) => ("resources/read", json!({ "uri": uri })),
        }
    }

    /// What follows the id in a request line: `,"method":...,"params":...}`.
    pub(crate) fn line_suffix(&self) -> String {
        let (method, params) = self.request();
        format!(r#","method":{},"params":{params}}}"#, json!(method))
    }

    /// Whether `result` answers the request rightly; a server cannot win by failing fast.
    pub(crate) fn check(&self, result: &Value) -> Result<(), String> {
        match self {
            Self::Search => check::search_result(result),
            Self::Read(uri) => check::read_result(result, uri),
        }
    }

    /// The request, as the report names it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Search => format!("`tools/call search_products {}`", check::ARGUMENTS),
            Self::Read(uri) => format!("`resources/read {uri}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_are_parsed_and_mistakes_refused() {
        assert_eq!(Workload::parse("search"), Ok(Workload::Search));
        assert_eq!(
            Workload::parse("read:shop://products/sku-001"),
            Ok(Workload::Read("shop://products/sku-001".into()))
        );
        assert!(Workload::parse("read:").is_err());
        assert!(Workload::parse("write:x").is_err());
    }

    #[test]
    fn a_request_line_is_json_rpc() {
        let read = Workload::Read("file:///tmp/a \"b\".md".into());
        let line = format!(r#"{{"jsonrpc":"2.0","id":7{}"#, read.line_suffix());
        let request: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(request["method"], "resources/read");
        assert_eq!(request["params"]["uri"], "file:///tmp/a \"b\".md");
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7{}"#,
            Workload::Search.line_suffix()
        );
        let request: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(request["params"]["arguments"]["query"], "mouse");
    }
}
