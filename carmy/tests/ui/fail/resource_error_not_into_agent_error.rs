use carmy::prelude::*;

#[derive(Debug)]
struct ShopError;

#[resource(uri = "shop://policies/returns")]
async fn returns() -> Result<String, ShopError> {
    Err(ShopError)
}

fn main() {
    let _ = Carmy::new().resource(returns).build();
}
