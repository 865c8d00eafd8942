use carmy::prelude::*;

struct Shop;

impl Shop {
    #[tool(effect = "read")]
    async fn search(&self, query: String) -> Result<String, AgentError> {
        Ok(query)
    }
}

fn main() {}
