// A serde type is a tool's output, not a resource's: a resource returns text or bytes.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ProductRef {
    id: String,
}

#[derive(serde::Serialize)]
struct Product {
    id: String,
}

#[resource(uri = "shop://products/{id}")]
async fn product(input: ProductRef) -> Result<Product, AgentError> {
    Ok(Product { id: input.id })
}

fn main() {
    let _ = Carmy::new().resource(product).build();
}
