//! A checker for the portable schema profile, for tests of any catalog.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Subschemas, is_null_schema, subschemas};

/// Why a schema is not portable: every problem found, each at the JSON pointer of the
/// subschema at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", display(.problems))]
pub struct NotPortable {
    problems: Vec<PortabilityProblem>,
}

impl NotPortable {
    /// Each problem, in the order found.
    pub fn problems(&self) -> &[PortabilityProblem] {
        &self.problems
    }
}

/// One departure from the portable profile.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PortabilityProblem {
    /// The JSON pointer of the subschema at fault (`""` for the root).
    pub path: String,
    /// What is wrong there, and what to do instead.
    pub message: String,
}

fn display(problems: &[PortabilityProblem]) -> String {
    problems
        .iter()
        .map(|problem| format!("at `{}`: {}", problem.path, problem.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Problems as they are found.
#[derive(Default)]
struct Problems(Vec<PortabilityProblem>);

impl Problems {
    fn push(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(PortabilityProblem {
            path: path.to_owned(),
            message: message.into(),
        });
    }
}

/// Checks that `schema` keeps to the portable profile that every popular MCP client accepts
/// (see [`SchemaProfile::Portable`](crate::SchemaProfile::Portable)):
///
/// - the root says `"type": "object"` (MCP tool arguments are one JSON object), and is not a
///   `$ref`;
/// - no `$ref` or `$defs`, except for recursive types, which cannot be inlined;
/// - no nullable spellings: no `"type": [..., "null"]`, no `{"type": "null"}` alternative in an
///   `anyOf`/`oneOf` (optional fields are simply not required);
/// - every `enum` and `const` states its `type`.
///
/// Returns every problem found, each with the JSON pointer of the subschema at fault.
///
/// ```
/// use carmy_core::schema::check_portable;
/// use serde_json::json;
///
/// assert!(check_portable(&json!({
///     "type": "object",
///     "properties": { "size": { "type": "string", "enum": ["s", "l"] } }
/// })).is_ok());
///
/// let problems = check_portable(&json!({
///     "type": "object",
///     "properties": { "limit": { "type": ["integer", "null"] } }
/// })).unwrap_err();
/// assert_eq!(problems.problems()[0].path, "/properties/limit");
/// assert!(problems.to_string().starts_with("at `/properties/limit`: a nullable `type` array"));
/// ```
///
/// A test that holds a whole catalog to the profile:
///
/// ```no_run
/// # fn runtime() -> carmy_core::Runtime { unimplemented!() }
/// for entry in runtime().catalog() {
///     carmy_core::schema::check_portable(entry.input_schema())
///         .unwrap_or_else(|problems| panic!("{}: {problems}", entry.name()));
/// }
/// ```
pub fn check_portable(schema: &Value) -> Result<(), NotPortable> {
    let mut problems = Problems::default();
    let Value::Object(root) = schema else {
        problems.push(
            "",
            format!("the root is `{schema}`, not an object schema; clients expect an object"),
        );
        return Err(NotPortable {
            problems: problems.0,
        });
    };
    if !super::is_object_schema(schema) {
        problems.push(
            "",
            format!(
                "the root has {}, but MCP tool arguments are one JSON object, so clients expect \
                 `\"type\": \"object\"` at the root",
                super::stated_type(schema)
            ),
        );
    }
    if root.contains_key("$ref") {
        problems.push("", "a `$ref` at the root is rejected by some clients");
    }
    let recursive = recursive_definitions(root);
    for keyword in ["$defs", "definitions"] {
        if let Some(Value::Object(definitions)) = root.get(keyword) {
            for (name, definition) in definitions {
                let path = format!("/{keyword}/{}", escape(name));
                if !recursive.contains(name.as_str()) {
                    problems.push(
                        &path,
                        "a definition of a type that is not recursive; inline it",
                    );
                }
                check(definition, &path, &recursive, &mut problems);
            }
        }
    }
    check_node(root, "", &recursive, &mut problems);
    if problems.0.is_empty() {
        Ok(())
    } else {
        Err(NotPortable {
            problems: problems.0,
        })
    }
}

fn check(schema: &Value, path: &str, recursive: &BTreeSet<&str>, problems: &mut Problems) {
    if let Value::Object(node) = schema {
        if node.contains_key("$defs") || node.contains_key("definitions") {
            problems.push(path, "definitions below the root; inline them");
        }
        check_node(node, path, recursive, problems);
    }
}

/// Checks one subschema and recurses into its children (the root's `$defs` are done apart).
fn check_node(
    node: &Map<String, Value>,
    path: &str,
    recursive: &BTreeSet<&str>,
    problems: &mut Problems,
) {
    if let Some(Value::Array(types)) = node.get("type")
        && types.iter().any(|ty| ty == "null")
    {
        problems.push(
            path,
            "a nullable `type` array; make the field optional instead",
        );
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = node.get(keyword)
            && alternatives.iter().any(is_null_schema)
        {
            problems.push(
                path,
                format!("a `null` alternative in `{keyword}`; make the field optional instead"),
            );
        }
    }
    if (node.contains_key("enum") || node.contains_key("const")) && !node.contains_key("type") {
        problems.push(path, "an `enum` or `const` without `type`");
    }
    if let Some(reference) = node.get("$ref") {
        let allowed = match reference.as_str() {
            Some("#") => true,
            Some(reference) => {
                definition_name(reference).is_some_and(|name| recursive.contains(name))
            }
            None => false,
        };
        if !allowed && !path.is_empty() {
            problems.push(
                path,
                format!("`$ref` to {reference}, which is not a recursive type; inline it"),
            );
        }
    }
    for (keyword, child) in node {
        // The root's definitions are checked apart; definitions elsewhere are flagged by `check`.
        if matches!(keyword.as_str(), "$defs" | "definitions") {
            continue;
        }
        match (subschemas(keyword), child) {
            (Some(Subschemas::Named), Value::Object(children)) => {
                for (name, child) in children {
                    let child_path = format!("{path}/{keyword}/{}", escape(name));
                    check(child, &child_path, recursive, problems);
                }
            }
            (Some(Subschemas::Listed), Value::Array(children)) => {
                for (index, child) in children.iter().enumerate() {
                    let child_path = format!("{path}/{keyword}/{index}");
                    check(child, &child_path, recursive, problems);
                }
            }
            (Some(Subschemas::Single), child) => {
                check(child, &format!("{path}/{keyword}"), recursive, problems);
            }
            _ => {}
        }
    }
}

/// `#/$defs/Name` → `Name`.
fn definition_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .filter(|name| !name.contains('/'))
}

/// The root definitions that reach themselves through `$ref`s: the recursive types.
fn recursive_definitions(root: &Map<String, Value>) -> BTreeSet<&str> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for keyword in ["$defs", "definitions"] {
        if let Some(Value::Object(definitions)) = root.get(keyword) {
            for (name, definition) in definitions {
                let mut targets = BTreeSet::new();
                collect_references(definition, &mut targets);
                edges.entry(name.as_str()).or_default().extend(targets);
            }
        }
    }
    edges
        .keys()
        .copied()
        .filter(|&start| {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&str> = edges[start].iter().copied().collect();
            while let Some(name) = stack.pop() {
                if name == start {
                    return true;
                }
                if seen.insert(name)
                    && let Some(next) = edges.get(name)
                {
                    stack.extend(next.iter().copied());
                }
            }
            false
        })
        .collect()
}

fn collect_references<'a>(schema: &'a Value, targets: &mut BTreeSet<&'a str>) {
    match schema {
        Value::Object(node) => {
            if let Some(name) = node
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(definition_name)
            {
                targets.insert(name);
            }
            node.values()
                .for_each(|child| collect_references(child, targets));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|child| collect_references(child, targets)),
        _ => {}
    }
}

/// JSON pointer escaping of one reference token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_recursive_definitions_only() {
        let tree = json!({
            "type": "object",
            "properties": { "root": { "$ref": "#/$defs/Node" } },
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": { "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } } }
                }
            }
        });
        assert_eq!(check_portable(&tree), Ok(()));
        let self_root = json!({
            "type": "object",
            "properties": { "next": { "$ref": "#" } }
        });
        assert_eq!(check_portable(&self_root), Ok(()));

        let needless = json!({
            "type": "object",
            "properties": { "address": { "$ref": "#/$defs/Address" } },
            "$defs": { "Address": { "type": "object" } }
        });
        let problems = check_portable(&needless).unwrap_err();
        let paths: Vec<_> = problems
            .problems()
            .iter()
            .map(|p| p.path.as_str())
            .collect();
        assert_eq!(
            paths,
            ["/$defs/Address", "/properties/address"],
            "{problems}"
        );
    }

    #[test]
    fn rejects_each_non_portable_spelling() {
        let cases = [
            (
                json!({ "$ref": "#/$defs/X", "$defs": { "X": { "type": "object" } } }),
                "at ``",
            ),
            (
                json!({ "type": "object", "properties": { "a": { "enum": ["x", "y"] } } }),
                "/properties/a",
            ),
            (
                json!({ "type": "object", "properties": { "a": { "const": 1 } } }),
                "/properties/a",
            ),
            (
                json!({ "type": "object", "properties": { "a": { "anyOf": [{ "type": "string" }, { "type": "null" }] } } }),
                "/properties/a",
            ),
            (
                json!({ "type": "object", "properties": { "a": { "type": "array", "items": { "type": ["string", "null"] } } } }),
                "/properties/a/items",
            ),
            (
                json!({ "type": "object", "properties": { "a": { "type": "object", "$defs": {} } } }),
                "/properties/a",
            ),
        ];
        for (schema, at) in cases {
            let problems = check_portable(&schema).expect_err(&schema.to_string());
            assert!(problems.to_string().contains(at), "{at}: {problems}");
        }
        assert!(check_portable(&json!(true)).is_err());
    }

    #[test]
    fn the_root_must_say_it_is_an_object() {
        for (schema, says) in [
            (
                json!({ "type": "string" }),
                "the root has `\"type\": \"string\"`",
            ),
            (
                json!({ "type": ["object", "null"] }),
                "the root has `\"type\": [\"object\",\"null\"]`",
            ),
            (json!({}), "the root has no `\"type\"`"),
            (
                json!({ "anyOf": [{ "type": "string" }, { "type": "object" }] }),
                "the root has no `\"type\"`",
            ),
        ] {
            let problems = check_portable(&schema).expect_err(&schema.to_string());
            let root = problems
                .problems()
                .iter()
                .find(|problem| problem.path.is_empty())
                .unwrap_or_else(|| panic!("{schema}: {problems}"));
            assert!(
                root.message.starts_with(says)
                    && root.message.ends_with(
                        "but MCP tool arguments are one JSON object, so clients expect \
                         `\"type\": \"object\"` at the root"
                    ),
                "{schema}: {}",
                root.message
            );
        }
        assert_eq!(check_portable(&json!({ "type": "object" })), Ok(()));
    }
}
