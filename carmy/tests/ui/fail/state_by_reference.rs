use carmy::prelude::*;

struct Db;

#[tool(effect = "read")]
async fn count(db: &State<Db>) -> Result<u32, AgentError> {
    let _ = db;
    Ok(0)
}

// The tool still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().tool(count).build();
}
