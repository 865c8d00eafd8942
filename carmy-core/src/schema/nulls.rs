//! `null` members that the portable profile spells as absent: dropped from arguments and
//! results before they are checked.

use serde_json::Value;

/// Removes `null` members of objects where the schema does not require the property and does not
/// accept `null`: a model that writes `"limit": null` means "no limit", and a result's `None`
/// field is what the portable schema spells as an absent one. A no-op for raw schemas, which
/// accept the `null`s.
pub fn drop_optional_nulls(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(members) => {
            let Some(Value::Object(properties)) = schema.get("properties") else {
                return;
            };
            let required = schema.get("required").and_then(Value::as_array);
            members.retain(|name, member| {
                !(member.is_null()
                    && properties
                        .get(name)
                        .is_some_and(|property| drops_null(required, name, property)))
            });
            for (name, member) in members.iter_mut() {
                if let Some(property) = properties.get(name) {
                    drop_optional_nulls(property, member);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    drop_optional_nulls(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// Whether [`drop_optional_nulls`] can remove anything from a value checked against `schema`:
/// the same walk over the schema alone, done once per tool so that results whose schema has no
/// optional non-nullable member anywhere (most of them) skip the walk per call.
pub(crate) fn may_drop_nulls(schema: &Value) -> bool {
    let droppable_member = || {
        let Some(Value::Object(properties)) = schema.get("properties") else {
            return false;
        };
        let required = schema.get("required").and_then(Value::as_array);
        properties.iter().any(|(name, property)| {
            drops_null(required, name, property) || may_drop_nulls(property)
        })
    };
    droppable_member() || schema.get("items").is_some_and(may_drop_nulls)
}

/// Whether a `null` member `name`, described by `property`, is dropped: not `required`, and its
/// schema does not accept `null`.
fn drops_null(required: Option<&Vec<Value>>, name: &str, property: &Value) -> bool {
    !required.is_some_and(|required| required.iter().any(|r| r == name)) && !accepts_null(property)
}

fn accepts_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(ty)) => ty == "null",
        Some(Value::Array(types)) => types.iter().any(|ty| ty == "null"),
        // No stated type (a `$ref`, an `anyOf`...): let the validator decide.
        _ => true,
    }
}
