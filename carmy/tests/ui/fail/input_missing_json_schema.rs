// The error is schemars' bound, reported on the input's type: rustc shows no advice of Carmy's
// here (see the comment on `ToolInput` in carmy-core/src/tool.rs).
// Missing `Deserialize` gets the same error on the same span (see the `compile_fail` doctest
// on `carmy::ToolInputDoc`); it is not pinned here because rustc's list of other implementors
// of `Deserialize` prints `Path` differently depending on which crates the build graph holds.
use carmy::prelude::*;

#[derive(serde::Deserialize)]
struct SearchInput {
    query: String,
}

#[tool(effect = "read")]
async fn search(input: SearchInput) -> Result<String, AgentError> {
    Ok(input.query)
}

fn main() {
    let _ = Carmy::new().tool(search).build();
}
