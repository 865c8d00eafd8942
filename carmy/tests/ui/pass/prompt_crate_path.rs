//! `crate = "..."` on a prompt and its completion, for a renamed dependency, absolute and
//! relative.

extern crate carmy as renamed;

use renamed::prelude::*;

mod prompts {
    use ::renamed as my_carmy;
    use my_carmy::{AgentError, Completions, Context};

    #[my_carmy::prompt(crate = "::renamed")]
    pub async fn absolute(ctx: &Context) -> Result<String, AgentError> {
        Ok(ctx.principal().unwrap_or("anyone").to_owned())
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Review {
        pub order_id: String,
    }

    async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(typed, ["ord-1"]))
    }

    #[my_carmy::prompt(crate = "my_carmy", complete(order_id = order_ids))]
    pub async fn relative(input: Review) -> Result<String, AgentError> {
        Ok(input.order_id)
    }
}

fn main() {
    Carmy::new()
        .prompt(prompts::absolute)
        .prompt(prompts::relative)
        .build()
        .unwrap();
}
