use carmy::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct GreetInput {
    /// Who to greet.
    name: String,
}

/// Greet someone by name.
#[tool(effect = "none")]
async fn greet(input: GreetInput) -> Result<String, AgentError> {
    Ok(format!("Hello, {}!", input.name))
}

fn main() -> std::process::ExitCode {
    carmy::cli::Cli::build(Carmy::new().tool(greet))
        .name(env!("CARGO_PKG_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .main()
}
