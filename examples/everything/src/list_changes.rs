//! The suite's hooks for list changes: `test_trigger_tool_change` and
//! `test_trigger_prompt_change` change the tool list and the prompt list while the server
//! serves, by turning a tool (`test_dynamic_tool`) or a prompt (`test_dynamic_prompt`) off, or
//! on again, with [`Catalog::disable`](carmy::catalog::Catalog::disable). Every session is then
//! told, as it would be of any change of the catalog.

use std::sync::{Mutex, OnceLock, PoisonError};

use carmy::{AgentError, Message, Messages, Runtime, ToolContent, catalog::Disabled, prompt, tool};

/// The runtime whose catalog the hooks change, kept once it is built (`main.rs`).
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Which of the two are off now: the tool, the prompt.
static OFF: Mutex<(bool, bool)> = Mutex::new((false, false));

/// Keeps `runtime`, whose catalog the hooks change.
pub fn keep(runtime: &Runtime) {
    let _ = RUNTIME.set(runtime.clone());
}

/// Turns the tool (else the prompt) off if it is on, on if it is off.
fn toggle(tool: bool) -> Result<ToolContent, AgentError> {
    let runtime = RUNTIME
        .get()
        .ok_or_else(|| AgentError::internal("the runtime was not kept"))?;
    let mut off = OFF.lock().unwrap_or_else(PoisonError::into_inner);
    if tool {
        off.0 = !off.0;
    } else {
        off.1 = !off.1;
    }
    let rules = [
        off.0.then_some("test_dynamic_tool"),
        off.1.then_some("prompt:test_dynamic_prompt"),
    ];
    let disabled = Disabled::parse(rules.into_iter().flatten())
        .map_err(|error| AgentError::internal(error.to_string()))?;
    runtime.catalog().disable(disabled);
    let (what, now) = if tool {
        ("test_dynamic_tool", off.0)
    } else {
        ("test_dynamic_prompt", off.1)
    };
    Ok(ToolContent::new().text(format!("{what} is {}", if now { "off" } else { "on" })))
}

/// Turns `test_dynamic_tool` off, or on again: the tool list changes.
#[tool(effect = "write", parallel_safe = true)]
pub async fn test_trigger_tool_change() -> Result<ToolContent, AgentError> {
    toggle(true)
}

/// Turns `test_dynamic_prompt` off, or on again: the prompt list changes.
#[tool(effect = "write", parallel_safe = true)]
pub async fn test_trigger_prompt_change() -> Result<ToolContent, AgentError> {
    toggle(false)
}

/// The tool `test_trigger_tool_change` turns off and on.
#[tool(effect = "none")]
pub async fn test_dynamic_tool() -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().text("here"))
}

/// The prompt `test_trigger_prompt_change` turns off and on.
#[prompt]
pub async fn test_dynamic_prompt() -> Result<Messages, AgentError> {
    Ok(Message::user("here").into())
}
