//! A checker for the portable schema profile, for tests of any catalog.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::schema::{Subschemas, is_null_schema, subschemas};

/// Checks that `schema` keeps to the portable profile that every popular MCP client accepts
/// (see [`SchemaProfile::Portable`](crate::SchemaProfile::Portable)):
///
/// - the root is an object schema, not a `$ref`;
/// - no `$ref` or `$defs`, except for recursive types, which cannot be inlined;
/// - no nullable spellings: no `"type": [..., "null"]`, no `{"type": "null"}` alternative in an
///   `anyOf`/`oneOf` (optional fields are simply not required);
/// - every `enum` and `const` states its `type`.
///
/// Returns every problem found, each with the JSON pointer of the subschema at fault.
///
/// ```
/// use carmy_core::check_portable;
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
/// assert!(problems.contains("/properties/limit"), "{problems}");
/// ```
///
/// A test that holds a whole catalog to the profile:
///
/// ```no_run
/// # fn runtime() -> carmy_core::Runtime { unimplemented!() }
/// for entry in runtime().catalog() {
///     carmy_core::check_portable(entry.input_schema())
///         .unwrap_or_else(|problems| panic!("{}: {problems}", entry.name()));
/// }
/// ```
pub fn check_portable(schema: &Value) -> Result<(), String> {
    let mut problems = Vec::new();
    let Value::Object(root) = schema else {
        return Err(format!(
            "the root is `{schema}`, not an object schema; clients expect an object"
        ));
    };
    if root.contains_key("$ref") {
        problems.push("at ``: a `$ref` at the root is rejected by some clients".to_owned());
    }
    let recursive = recursive_definitions(root);
    for keyword in ["$defs", "definitions"] {
        if let Some(Value::Object(definitions)) = root.get(keyword) {
            for (name, definition) in definitions {
                let path = format!("/{keyword}/{}", escape(name));
                if !recursive.contains(name.as_str()) {
                    problems.push(format!(
                        "at `{path}`: a definition of a type that is not recursive; inline it"
                    ));
                }
                check(definition, &path, &recursive, &mut problems);
            }
        }
    }
    check_node(root, "", &recursive, &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn check(schema: &Value, path: &str, recursive: &BTreeSet<&str>, problems: &mut Vec<String>) {
    if let Value::Object(node) = schema {
        if node.contains_key("$defs") || node.contains_key("definitions") {
            problems.push(format!(
                "at `{path}`: definitions below the root; inline them"
            ));
        }
        check_node(node, path, recursive, problems);
    }
}

/// Checks one subschema and recurses into its children (the root's `$defs` are done apart).
fn check_node(
    node: &Map<String, Value>,
    path: &str,
    recursive: &BTreeSet<&str>,
    problems: &mut Vec<String>,
) {
    if let Some(Value::Array(types)) = node.get("type")
        && types.iter().any(|ty| ty == "null")
    {
        problems.push(format!(
            "at `{path}`: a nullable `type` array; make the field optional instead"
        ));
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = node.get(keyword)
            && alternatives.iter().any(is_null_schema)
        {
            problems.push(format!(
                "at `{path}`: a `null` alternative in `{keyword}`; make the field optional instead"
            ));
        }
    }
    if (node.contains_key("enum") || node.contains_key("const")) && !node.contains_key("type") {
        problems.push(format!("at `{path}`: an `enum` or `const` without `type`"));
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
            problems.push(format!(
                "at `{path}`: `$ref` to {reference}, which is not a recursive type; inline it"
            ));
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
        assert!(problems.contains("/$defs/Address"), "{problems}");
        assert!(problems.contains("/properties/address"), "{problems}");
    }

    #[test]
    fn rejects_each_non_portable_spelling() {
        let cases = [
            (
                json!({ "$ref": "#/$defs/X", "$defs": { "X": { "type": "object" } } }),
                "root",
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
            assert!(problems.contains(at), "{at}: {problems}");
        }
        assert!(check_portable(&json!(true)).is_err());
    }
}
