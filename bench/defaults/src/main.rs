//! `bench-carmy-defaults`: the benchmarks' `search_products` served the way a user of Carmy
//! serves their own tools: one `#[tool]` function, `carmy::cli::Cli`, Carmy's default features.
//! `bench/run.sh` measures it beside the shop, which links every optional feature (OAuth, the
//! stores, HTTP, the file watcher), to show what those cost in memory and start-up.

// The catalog and its search, shared with the other contenders (this package stays apart from
// `carmy-bench`, whose dependencies would widen Carmy's features).
#[allow(dead_code, unreachable_pub)]
#[path = "../../src/catalog.rs"]
mod catalog;

use std::process::ExitCode;

use carmy::{AgentError, Carmy, tool};

use catalog::{SearchInput, SearchOutput};

/// Search the product catalog by name or tag.
#[tool(effect = "read", idempotent)]
async fn search_products(input: SearchInput) -> Result<SearchOutput, AgentError> {
    Ok(catalog::search(&input))
}

fn main() -> ExitCode {
    let runtime = match Carmy::new().tool(search_products).build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench-carmy-defaults: {error}");
            return ExitCode::FAILURE;
        }
    };
    carmy::cli::Cli::new(runtime)
        .name(env!("CARGO_BIN_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .main()
}
