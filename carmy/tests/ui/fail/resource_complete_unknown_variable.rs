// `complete(...)` on a resource names variables of its template.
use carmy::prelude::*;
use carmy::Completions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ProductRef {
    id: String,
}

async fn product_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["sku-001"]))
}

#[resource(uri = "shop://products/{id}", complete(sku = product_ids))]
async fn product(input: ProductRef) -> Result<String, AgentError> {
    Ok(input.id)
}

// The resource still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().resource(product).build();
    let _ = product_ids;
}
