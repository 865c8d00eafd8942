use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: String) -> Option<String> {
    Some(query)
}

// The tool still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
}
