// Another crate's `State<T>` (axum's, here a stand-in) is taken for Carmy's: one error, on the type.
use carmy::prelude::*;

mod web {
    pub struct State<T>(pub T);
}

struct Db;

#[tool(effect = "read")]
async fn count(db: web::State<Db>) -> Result<u32, AgentError> {
    let web::State(Db) = db;
    Ok(0)
}

fn main() {
    let _ = Carmy::new().tool(count).state(Db).build();
}
