// A fixed URI has no variables to fill an input from.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Language {
    code: String,
}

#[resource(uri = "shop://policies/returns")]
async fn returns(language: Language) -> Result<String, AgentError> {
    Ok(format!("Within 30 days ({}).", language.code))
}

// The resource still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().resource(returns).build();
}
