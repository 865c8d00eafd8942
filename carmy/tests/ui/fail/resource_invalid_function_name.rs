use carmy::prelude::*;

#[resource(uri = "shop://policies/retours")]
async fn retours_été() -> Result<String, AgentError> {
    Ok("Sous 30 jours.".into())
}

// The resource still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().resource(retours_été).build();
}
