use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: String) -> Option<String> {
    Some(query)
}

fn main() {}
