// A fixed URI has no variable to complete.
use carmy::prelude::*;
use carmy::Completions;

async fn languages(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["en", "fr"]))
}

#[resource(uri = "shop://policies/returns", complete(lang = languages))]
async fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

fn main() {
    let _ = Carmy::new().resource(returns).build();
    let _ = languages;
}
