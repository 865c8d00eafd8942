//! Completion: the ids a user is typing, suggested from what the shop holds now. Named in
//! `complete(...)` by the `order_help` prompt ([`crate::prompts`]) and by the
//! `shop://products/{id}` and `shop://orders/{order_id}` templates ([`crate::resources`]).

use carmy::{AgentError, Completions, execution::CompletionRequest};

use crate::{Store, books};

/// The ids of the caller's orders that start with what the user typed, oldest first. Each
/// names an order resource, so that a caller who may not read those is suggested none.
pub async fn order_ids(request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
    let owner = books::owner(request.context());
    let ids = books::order_ids(request.records(), owner).await?;
    Ok(
        Completions::starting_with(request.value(), ids.iter().map(String::as_str))
            .naming("shop://orders/{order_id}"),
    )
}

/// The ids of the products in the catalog that start with what the user typed, in catalog
/// order.
pub async fn product_ids(request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
    let Some(store) = request.state::<Store>() else {
        return Ok(Completions::none());
    };
    Ok(Completions::starting_with(
        request.value(),
        store.products().iter().map(|product| product.id.as_str()),
    ))
}
