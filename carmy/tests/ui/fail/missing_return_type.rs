use carmy::prelude::*;

#[tool(effect = "write")]
async fn save(query: String) {
    let _ = query;
}

fn main() {}
