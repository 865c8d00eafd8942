use carmy::prelude::*;

#[derive(Debug)]
struct ShopError;

#[tool(effect = "read")]
async fn search(query: String) -> Result<String, ShopError> {
    Ok(query)
}

fn main() {
    let _ = Carmy::new().tool(search).build();
}
