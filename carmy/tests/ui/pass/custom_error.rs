//! Any error type with `Into<AgentError>`, including through a `Result` alias.

use carmy::prelude::*;

#[derive(Debug)]
enum ShopError {
    OutOfStock,
}

impl From<ShopError> for AgentError {
    fn from(error: ShopError) -> Self {
        match error {
            ShopError::OutOfStock => AgentError::conflict("OUT_OF_STOCK", "out of stock"),
        }
    }
}

type ShopResult<T> = std::result::Result<T, ShopError>;

mod shop {
    pub type Result<T> = std::result::Result<T, super::ShopError>;
}

#[tool(effect = "write")]
async fn reserve() -> Result<u32, ShopError> {
    Err(ShopError::OutOfStock)
}

/// A one-argument alias whose last segment is `Result`.
#[tool(effect = "write")]
async fn restock() -> shop::Result<u32> {
    Ok(1)
}

async fn direct_calls() -> ShopResult<()> {
    reserve().await?;
    restock::call().await?;
    Ok(())
}

fn main() {
    Carmy::new().tool(reserve).tool(restock).build().unwrap();
    let _ = direct_calls();
}
