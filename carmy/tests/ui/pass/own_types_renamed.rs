//! The fix the `Context` diagnostic suggests: a type of one's own named `Context`, imported under
//! another name, is an ordinary input next to Carmy's context.

use carmy::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

mod conversation {
    #[derive(super::Deserialize, super::JsonSchema)]
    pub struct Context {
        pub topic: String,
    }
}

use conversation::Context as Conversation;

#[tool(effect = "read")]
async fn summarize(conversation: Conversation, ctx: &Context) -> Result<String, AgentError> {
    let _ = ctx;
    Ok(conversation.topic)
}

fn main() {
    Carmy::new().tool(summarize).build().unwrap();
}
