//! A catalog of 1,000 tools for the `tools/list` benchmark. Each is `search_products`' shape
//! (same input and output types), under its own name `tool_000` ... `tool_999`. A tool's name
//! is a `const`, so each needs its own type: `Numbered<N>`, one impl per `N`, by macro.

use carmy_bench::catalog::{self, SearchInput, SearchOutput};
use carmy_core::{AgentError, Carmy, Effect, Invocation, Runtime, Tool, ToolSpec};

pub(crate) struct Numbered<const N: usize>;

macro_rules! numbered {
    ($($h:literal)*) => { $( numbered!(@tens $h; 0 1 2 3 4 5 6 7 8 9); )* };
    (@tens $h:literal; $($t:literal)*) => { $( numbered!(@units $h $t; 0 1 2 3 4 5 6 7 8 9); )* };
    (@units $h:literal $t:literal; $($u:literal)*) => { $(
        impl Tool for Numbered<{ $h * 100 + $t * 10 + $u }> {
            type Input = SearchInput;
            type Output = SearchOutput;
            const SPEC: ToolSpec = ToolSpec::new(concat!("tool_", $h, $t, $u), Effect::Read)
                .description(catalog::DESCRIPTION);

            async fn run(&self, input: SearchInput, _: Invocation) -> Result<SearchOutput, AgentError> {
                Ok(catalog::search(&input))
            }
        }
    )* };
}

macro_rules! register {
    ($carmy:ident; $($h:literal)*) => { $( register!(@tens $carmy; $h; 0 1 2 3 4 5 6 7 8 9); )* };
    (@tens $carmy:ident; $h:literal; $($t:literal)*) => {
        $( register!(@units $carmy; $h $t; 0 1 2 3 4 5 6 7 8 9); )*
    };
    (@units $carmy:ident; $h:literal $t:literal; $($u:literal)*) => {
        $( $carmy = $carmy.tool(Numbered::<{ $h * 100 + $t * 10 + $u }>); )*
    };
}

numbered!(0 1 2 3 4 5 6 7 8 9);

/// A runtime with the 1,000 tools.
pub(crate) fn runtime() -> Runtime {
    let mut carmy = Carmy::new();
    register!(carmy; 0 1 2 3 4 5 6 7 8 9);
    carmy.build().expect("1,000 distinct tools build")
}
