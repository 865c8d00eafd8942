//! Answering a server's questions (elicitation): asked on the terminal when there is one,
//! declined when there is not.
//!
//! Declining is the only safe answer without a person: accepting would approve whatever the
//! server asked (a confirmation of a destructive call included), and hanging would block a
//! script forever. The question is still shown on stderr so the log says why a call was refused.
//!
//! Everything shown goes through [`say`] or the prompt in [`ask`], escaped (`escape.rs`); what
//! the server names for one line (a field, its description, a URL) stays on it.

use std::io::{BufRead, IsTerminal, Write};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use crate::escape;

/// The user's answer to `request`.
pub(crate) async fn answer(request: ElicitRequestParams) -> ElicitResult {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let (message, schema) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            serde_json::to_value(requested_schema).unwrap_or_default(),
        ),
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            say(&format!(
                "the server asks: {}\n  open {}",
                indented(&message),
                escape::field(&url)
            ));
            // Following a URL is the user's business; carmy cannot know when it is done.
            return ElicitResult::new(ElicitationAction::Decline);
        }
        _ => return ElicitResult::new(ElicitationAction::Decline),
    };
    if !interactive {
        say(&format!(
            "the server asks: {}\ndeclined: no terminal to ask on",
            indented(&message)
        ));
        return ElicitResult::new(ElicitationAction::Decline);
    }
    // Reading the terminal blocks: keep it off the runtime's threads, which still carry the
    // connection (pings, progress) meanwhile.
    tokio::task::spawn_blocking(move || ask(&message, &schema))
        .await
        .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel))
}

fn ask(message: &str, schema: &Value) -> ElicitResult {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut prompt = |question: &str| -> Option<String> {
        eprint!("{}", escape::text(question));
        let _ = std::io::stderr().flush();
        lines.next().and_then(Result::ok)
    };
    say(&format!("the server asks: {}", indented(message)));
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, property) in &properties {
        let kind = property
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let description = property
            .get("description")
            .and_then(Value::as_str)
            .map(|text| format!(" ({})", escape::field(text)))
            .unwrap_or_default();
        let (shown_name, shown_kind) = (escape::field(name), escape::field(kind));
        loop {
            // End of input (Ctrl-D) cancels the whole question.
            let Some(typed) = prompt(&format!("  {shown_name}{description} [{shown_kind}]: "))
            else {
                return ElicitResult::new(ElicitationAction::Cancel);
            };
            let typed = typed.trim();
            if typed.is_empty() && !required.contains(&name.as_str()) {
                break;
            }
            match parse(kind, typed) {
                Some(value) => {
                    content.insert(name.clone(), value);
                    break;
                }
                None => say(&format!("  not a {shown_kind}; try again")),
            }
        }
    }
    match prompt("Send this answer? [y/N] ").as_deref().map(str::trim) {
        Some("y" | "Y" | "yes") => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
        }
        Some(_) => ElicitResult::new(ElicitationAction::Decline),
        None => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// A question over several lines, its later lines indented: none passes for one of carmy's.
fn indented(message: &str) -> String {
    message.replace('\n', "\n  ")
}

/// A line on stderr.
fn say(text: &str) {
    eprintln!("{}", escape::text(text));
}

/// `typed` as a value of the schema type `kind`, if it is one.
fn parse(kind: &str, typed: &str) -> Option<Value> {
    match kind {
        "boolean" => match typed {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "integer" => typed.parse::<i64>().ok().map(Value::from),
        "number" => typed.parse::<f64>().ok().map(Value::from),
        _ => Some(Value::String(typed.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse;

    #[test]
    fn typed_answers_follow_the_schema_type() {
        assert_eq!(parse("boolean", "y"), Some(json!(true)));
        assert_eq!(parse("boolean", "maybe"), None);
        assert_eq!(parse("integer", "42"), Some(json!(42)));
        assert_eq!(parse("integer", "4.2"), None);
        assert_eq!(parse("number", "4.5"), Some(json!(4.5)));
        assert_eq!(parse("string", "4.5"), Some(json!("4.5")));
    }
}
