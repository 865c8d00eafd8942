use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ProductRef {
    id: String,
}

#[resource(uri = "shop://products/{product-id}")]
async fn product(input: ProductRef) -> Result<String, AgentError> {
    Ok(input.id)
}

fn main() {
    let _ = Carmy::new().resource(product).build();
}
