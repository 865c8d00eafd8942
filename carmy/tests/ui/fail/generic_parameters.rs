use carmy::prelude::*;

#[tool(effect = "read")]
async fn search<Q: serde::de::DeserializeOwned>(query: Q) -> Result<(), AgentError> {
    let _ = query;
    Ok(())
}

#[tool(effect = "read")]
async fn whoami<'a>(ctx: &'a Context) -> Result<(), AgentError> {
    let _ = ctx;
    Ok(())
}

// The tools still exist, so registering them adds no errors.
fn main() {
    let _ = Carmy::new().tool(search).tool(whoami).build();
}
