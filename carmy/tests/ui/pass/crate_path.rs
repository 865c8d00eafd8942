//! `crate = "..."` for a renamed dependency: an `extern crate` alias at the crate root joins
//! the extern prelude (so `::renamed` works), and a `use` alias works as a relative path.

extern crate carmy as renamed;

use renamed::prelude::*;

mod tools {
    use ::renamed as my_carmy;
    use my_carmy::{AgentError, Context};

    #[my_carmy::tool(effect = "read", crate = "::renamed")]
    pub async fn absolute(ctx: &Context) -> Result<(), AgentError> {
        let _ = ctx;
        Ok(())
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Count {
        n: u32,
    }

    #[my_carmy::tool(effect = "read", crate = "my_carmy")]
    pub async fn relative(input: Count) -> Result<u32, AgentError> {
        Ok(input.n)
    }
}

fn main() {
    Carmy::new()
        .tool(tools::absolute)
        .tool(tools::relative)
        .build()
        .unwrap();
}
