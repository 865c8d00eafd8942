//! `config`: the effective configuration and where each value came from, as TOML that can be
//! saved as a configuration file (the origins are comments), or as JSON for scripts.

use serde_json::{Value as Json, json};

use super::{Loaded, keys::KEYS};

/// The text `config` prints.
pub(in crate::cli) fn print(loaded: &Loaded, as_json: bool) -> String {
    let tree = serde_json::to_value(&loaded.settings).expect("settings serialize");
    let entries: Vec<(&str, Option<Json>, String)> = KEYS
        .iter()
        .map(|key| {
            let value = key
                .path
                .split('.')
                .try_fold(&tree, |node, segment| node.get(segment))
                .filter(|value| !value.is_null())
                .map(shown);
            (key.path, value, loaded.origin(key.path))
        })
        .collect();
    if as_json {
        let list: Vec<Json> = entries
            .into_iter()
            .map(|(key, value, from)| json!({ "key": key, "value": value, "from": from }))
            .collect();
        return serde_json::to_string_pretty(&list).expect("JSON") + "\n";
    }
    let mut text = String::from(
        "# The effective configuration; after each value, where it came from.\n\
         # Flags beat the environment, which beats the file, which beats the defaults.\n",
    );
    // Top-level keys first: in TOML, what follows a [section] header belongs to it.
    let (top, nested): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .partition(|(key, _, _)| !key.contains('.'));
    let mut section = "";
    for (key, value, from) in top.into_iter().chain(nested) {
        let (head, name) = key.split_once('.').unwrap_or(("", key));
        if head != section {
            section = head;
            text.push_str(&format!("\n[{section}]\n"));
        }
        let line = match value {
            Some(value) => format!("{name} = {value}"),
            None => format!("# {name} = (unset)"),
        };
        text.push_str(&format!("{line:<40} # {from}\n"));
    }
    text
}

/// Every key as a Markdown table: its default, its variable, its flags and what it does. The
/// guide's reference (docs/06-configuration.md) is this table.
pub(in crate::cli) fn reference() -> String {
    let defaults = serde_json::to_value(super::Settings::default()).expect("settings serialize");
    let mut text =
        String::from("| key | default | environment | flags | meaning |\n|---|---|---|---|---|\n");
    for key in KEYS {
        let default = key
            .path
            .split('.')
            .try_fold(&defaults, |node, segment| node.get(segment))
            .filter(|value| !value.is_null() && *value != &Json::Array(Vec::new()))
            .map_or_else(|| "unset".to_owned(), |value| format!("`{value}`"));
        let variable = format!(
            "`CARMY_{}`",
            key.path.to_ascii_uppercase().replace('.', "__")
        );
        let flags = if key.flags.is_empty() { "" } else { key.flags };
        text.push_str(&format!(
            "| `{}` | {default} | {variable} | {flags} | {} |\n",
            key.path, key.about
        ));
    }
    text
}

/// A value as TOML writes it (JSON's scalars and arrays are valid TOML), any password in it
/// hidden.
fn shown(value: &Json) -> Json {
    match value {
        Json::String(text) => Json::String(crate::cli::redact::redacted(text)),
        Json::Array(items) => Json::Array(items.iter().map(shown).collect()),
        other => other.clone(),
    }
}
