//! Generated code uses absolute paths only: shadowing prelude names (and `core`, `std` and
//! `carmy` themselves as modules) breaks nothing.
#![allow(dead_code, non_camel_case_types, unused_imports)]

use ::carmy::{AgentError, Carmy, Context, State};

struct Result;
struct Option;
struct Box;
struct Some;
struct Ok;
struct Err;
struct Vec;
trait Send {}
trait Sync {}
trait Clone {}
trait Copy {}
trait Debug {}
trait Default {}
trait Deref {}
trait Future {}
trait Into {}
trait Sized {}
mod core {}
mod std {}
mod carmy {}
macro_rules! panic {
    ($($t:tt)*) => {
        compile_error!("shadowed panic")
    };
}
macro_rules! concat {
    ($($t:tt)*) => {
        compile_error!("shadowed concat")
    };
}

#[derive(::serde::Deserialize, ::schemars::JsonSchema)]
struct Input {
    text: ::std::string::String,
}

struct Db;

/// Shadowed names everywhere.
#[::carmy::tool(effect = "write", idempotent, timeout = "1.5ms")]
async fn shout(
    db: State<Db>,
    input: Input,
    ctx: &Context,
) -> ::core::result::Result<::std::string::String, AgentError> {
    let _ = (db, ctx);
    ::core::result::Result::Ok(input.text.to_uppercase())
}

#[::carmy::tool(effect = "none")]
async fn nothing(ctx: Context) -> ::core::result::Result<(), AgentError> {
    let _ = ctx;
    ::core::result::Result::Ok(())
}

fn main() {
    Carmy::new()
        .tool(shout)
        .tool(nothing)
        .state(Db)
        .build()
        .unwrap();
    let _ = shout(State::new(Db), Input { text: "hi".into() }, &Context::new());
    let _ = nothing::call(Context::new());
}
