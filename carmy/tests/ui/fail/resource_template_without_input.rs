// The template's `{id}` has nothing to bind to.
use carmy::prelude::*;

#[resource(uri = "shop://products/{id}")]
async fn product(ctx: &Context) -> Result<String, AgentError> {
    Ok(ctx.principal().unwrap_or_default().to_owned())
}

// The resource still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().resource(product).build();
}
