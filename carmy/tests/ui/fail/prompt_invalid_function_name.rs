// A prompt named after its function follows the naming rule too.
use carmy::prelude::*;

#[prompt]
async fn résumé() -> Result<String, AgentError> {
    Ok("Summarise the order.".into())
}

fn main() {
    let _ = Carmy::new().prompt(résumé).build();
}
