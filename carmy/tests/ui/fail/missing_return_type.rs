use carmy::prelude::*;

#[tool(effect = "write")]
async fn save(query: String) {
    let _ = query;
}

// The tool still exists, so registering and calling it add no errors.
fn main() {
    let _ = Carmy::new().tool(save).build();
    let _ = save("x".to_owned());
}
