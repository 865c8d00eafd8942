use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LineRef {
    order: String,
    line: String,
}

#[resource(uri = "shop://lines/{order}{line}")]
async fn line(input: LineRef) -> Result<String, AgentError> {
    Ok(format!("{} {}", input.order, input.line))
}

fn main() {
    let _ = Carmy::new().resource(line).build();
}
