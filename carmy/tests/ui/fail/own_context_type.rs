// A type of the user's own named `Context` is taken for Carmy's: one error, on the type, saying so.
use carmy::{AgentError, tool};

/// What the model tells the tool about the conversation, meant as the input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Context {
    topic: String,
}

#[tool(effect = "read")]
async fn summarize(context: Context) -> Result<String, AgentError> {
    Ok(context.topic)
}

fn main() {
    let _ = carmy::Carmy::new().tool(summarize).build();
}
