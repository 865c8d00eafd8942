use carmy::prelude::*;

#[derive(Debug)]
struct ShopError;

#[prompt]
async fn greet() -> Result<String, ShopError> {
    Ok("Say hello.".into())
}

fn main() {
    let _ = Carmy::new().prompt(greet).build();
}
