//! `crate = "..."` on a resource, for a renamed dependency, absolute and relative.

extern crate carmy as renamed;

use renamed::prelude::*;

mod resources {
    use ::renamed as my_carmy;
    use my_carmy::{AgentError, Context};

    #[my_carmy::resource(uri = "shop://policies/returns", crate = "::renamed")]
    pub async fn absolute(ctx: &Context) -> Result<String, AgentError> {
        Ok(ctx.principal().unwrap_or("anyone").to_owned())
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct ProductRef {
        pub id: String,
    }

    #[my_carmy::resource(uri = "shop://products/{id}", crate = "my_carmy")]
    pub async fn relative(input: ProductRef) -> Result<String, AgentError> {
        Ok(input.id)
    }
}

fn main() {
    Carmy::new()
        .resource(resources::absolute)
        .resource(resources::relative)
        .build()
        .unwrap();
}
