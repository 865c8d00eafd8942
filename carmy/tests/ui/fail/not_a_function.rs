use carmy::prelude::*;

#[tool(effect = "read")]
struct Search;

fn main() {}
