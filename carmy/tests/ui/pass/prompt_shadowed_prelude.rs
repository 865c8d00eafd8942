//! Generated code uses absolute paths only: shadowing prelude names (and `core`, `std` and
//! `carmy` themselves as modules) breaks no prompt and no completer.
#![allow(dead_code, non_camel_case_types, unused_imports)]

use ::carmy::{AgentError, Carmy, Context, State};

struct Result;
struct Option;
struct Box;
struct Some;
struct Ok;
struct Err;
struct Vec;
struct String;
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
trait IntoMessages {}
struct Prompt;
struct PromptSpec;
struct Completions;
struct CompletionRequest;
struct NoInput;
mod core {}
mod std {}
mod carmy {}
macro_rules! panic {
    ($($t:tt)*) => {
        compile_error!("shadowed panic")
    };
}

#[derive(::serde::Deserialize, ::schemars::JsonSchema)]
struct Review {
    order_id: ::std::string::String,
}

struct Db;

async fn order_ids(
    typed: &str,
) -> ::core::result::Result<::carmy::Completions, AgentError> {
    ::core::result::Result::Ok(::carmy::Completions::starting_with(typed, ["ord-1"]))
}

/// Shadowed names everywhere.
#[::carmy::prompt(title = "Review", timeout = "1s", complete(order_id = order_ids))]
async fn review_order(
    db: State<Db>,
    input: Review,
    ctx: &Context,
) -> ::core::result::Result<::std::string::String, AgentError> {
    let _ = (db, ctx);
    ::core::result::Result::Ok(input.order_id)
}

#[::carmy::prompt]
async fn greet(ctx: Context) -> ::core::result::Result<::carmy::Messages, AgentError> {
    let _ = ctx;
    ::core::result::Result::Ok(::carmy::Messages::new())
}

fn main() {
    Carmy::new()
        .prompt(review_order)
        .prompt(greet)
        .state(Db)
        .build()
        .unwrap();
    let _ = review_order(
        State::new(Db),
        Review { order_id: "ord-1".into() },
        &Context::new(),
    );
    let _ = greet::call(Context::new());
}
