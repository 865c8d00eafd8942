// A templated resource: `{id}` binds to the `id` field of `ProductRef` (checked at `build()`),
// shared state, an error type of one's own, and a name other than the function's.
use carmy::prelude::*;

/// One product, as JSON.
#[resource(
    uri = "shop://products/{id}",
    name = "product",
    mime_type = "application/json"
)]
async fn product_json(input: ProductRef, db: State<Db>) -> Result<Content, ShopError> {
    let product = db.product(&input.id).ok_or(ShopError::NotFound)?;
    Ok(Content::json(&product)?)
}
