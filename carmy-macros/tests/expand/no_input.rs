// The smallest tool: no parameters, no output. It takes `NoInput` (the empty object) and needs
// no `requirements`.
use carmy::prelude::*;

/// Is the service up?
#[tool(effect = "none")]
async fn ping() -> Result<(), AgentError> {
    Ok(())
}
