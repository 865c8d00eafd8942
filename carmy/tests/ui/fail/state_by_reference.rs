use carmy::prelude::*;

struct Db;

#[tool(effect = "read")]
async fn count(db: &State<Db>) -> Result<u32, AgentError> {
    let _ = db;
    Ok(0)
}

fn main() {}
