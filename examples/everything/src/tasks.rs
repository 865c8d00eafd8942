//! Tools that run as tasks (the tasks extension of 2026-07-28): long work, questions asked
//! from inside a task, a tool error, a panic, and a call that gathers input before it becomes
//! a task. `greet` is their counterpart that never is one.

use std::time::Duration;

use carmy::{
    AgentError, Context, ToolContent,
    ask::{Ask, Asks},
    tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The argument of `greet`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Name {
    /// Who to greet.
    pub name: String,
}

/// Greets, at once; never a task.
#[tool(effect = "none")]
pub async fn greet(input: Name) -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().text(format!("Hello, {}!", input.name)))
}

/// The arguments of `slow_compute`. The schema is written by hand: the everything server
/// publishes schemas as declared (`SchemaProfile::Raw`), and schemars would add `"format":
/// "double"`, which no validator knows.
#[derive(Debug, Deserialize)]
pub struct Compute {
    /// How long to work, in seconds.
    pub seconds: f64,
    /// A label, echoed in the result.
    pub label: Option<String>,
}

impl JsonSchema for Compute {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Compute".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "seconds": { "type": "number", "minimum": 0, "description": "How long to work, in seconds." },
                "label": { "type": "string", "description": "A label, echoed in the result." }
            },
            "required": ["seconds"]
        })
    }
}

/// Works for `seconds` (reporting progress each second), then says so; a task when the caller
/// can follow one. Cancelled, it stops at once.
#[tool(effect = "none", task = "optional", timeout = "10m")]
pub async fn slow_compute(input: Compute, context: &Context) -> Result<ToolContent, AgentError> {
    let seconds = input.seconds.clamp(0.0, 600.0);
    let mut left = Duration::from_secs_f64(seconds);
    let mut done = 0.0;
    while !left.is_zero() {
        let step = left.min(Duration::from_secs(1));
        tokio::time::sleep(step).await;
        left -= step;
        done += step.as_secs_f64();
        context.progress(
            done,
            Some(seconds),
            Some(&format!("{done:.0} of {seconds:.0} s")),
        );
    }
    let label = input.label.as_deref().unwrap_or("compute");
    Ok(ToolContent::new().text(format!("{label}: done after {seconds} s")))
}

/// Works a second, then fails as a tool does (`isError`); runs only as a task.
#[tool(effect = "none", task = "required")]
pub async fn failing_job() -> Result<ToolContent, AgentError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(AgentError::internal("the job failed, as it always does"))
}

/// Panics: nobody can give its answer, so its task fails.
#[tool(effect = "none", task = "optional")]
pub async fn protocol_error_job() -> Result<ToolContent, AgentError> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    panic!("protocol_error_job always panics")
}

fn confirm_form(message: &str) -> Ask {
    Ask::input(
        message,
        json!({
            "type": "object",
            "properties": {
                "confirm": { "type": "boolean", "description": "Go ahead" },
                "name": { "type": "string", "description": "Who confirms" }
            },
            "required": ["confirm"]
        }),
    )
}

fn confirmed(answer: &carmy::ask::InputAnswer) -> bool {
    answer.action == carmy::ask::InputAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|content| content.get("confirm"))
            .and_then(Value::as_bool)
            == Some(true)
}

/// The argument of `confirm_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Filename {
    /// The file to (pretend to) delete.
    pub filename: String,
}

/// Asks for a confirmation from inside its task, then says what it would have done (it
/// deletes nothing).
#[tool(effect = "none", task = "optional", timeout = "10m")]
pub async fn confirm_delete(input: Filename, context: &Context) -> Result<ToolContent, AgentError> {
    let question = format!("Delete {}?", input.filename);
    let answers = context
        .ask(Asks::new().with("confirm", confirm_form(&question)))
        .await?;
    let verdict = if confirmed(&answers.input("confirm")?) {
        "deleted"
    } else {
        "kept"
    };
    Ok(ToolContent::new().text(format!("{}: {verdict}", input.filename)))
}

/// Asks two questions at once from inside its task; goes on once both are answered, in any
/// order.
#[tool(effect = "none", task = "optional", timeout = "10m")]
pub async fn multi_input(context: &Context) -> Result<ToolContent, AgentError> {
    let answers = context
        .ask(
            Asks::new()
                .with("first", confirm_form("First confirmation"))
                .with("second", confirm_form("Second confirmation")),
        )
        .await?;
    let name = |key| -> Result<String, AgentError> {
        let answer = answers.input(key)?;
        Ok(answer
            .content
            .as_ref()
            .and_then(|content| content.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("someone")
            .to_owned())
    };
    Ok(ToolContent::new().text(format!(
        "confirmed by {} and {}",
        name("first")?,
        name("second")?
    )))
}

/// Asks the user's name as a plain call (answered on the client's next try), then works long
/// enough to become a task, which greets them; runs only as a task.
#[tool(effect = "none", task = "required", task_after = "250ms")]
pub async fn test_tool_with_task(context: &Context) -> Result<ToolContent, AgentError> {
    let form = json!({
        "type": "object",
        "properties": { "name": { "type": "string" } },
        "required": ["name"]
    });
    let answer = context
        .ask_input("user_name", "What is your name?", form)
        .await?;
    let name = answer
        .content
        .as_ref()
        .and_then(|content| content.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("stranger")
        .to_owned();
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(ToolContent::new().text(format!("Hello, {name}! (from a task)")))
}
