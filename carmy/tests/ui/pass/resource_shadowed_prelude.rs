//! Generated code uses absolute paths only: shadowing prelude names (and `core`, `std` and
//! `carmy` themselves as modules) breaks no resource.
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
trait IntoContents {}
struct Resource;
struct ResourceSpec;
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
struct ProductRef {
    id: ::std::string::String,
}

struct Db;

/// Shadowed names everywhere.
#[::carmy::resource(uri = "shop://products/{id}", mime_type = "text/plain", timeout = "1s")]
async fn product(
    db: State<Db>,
    input: ProductRef,
    ctx: &Context,
) -> ::core::result::Result<::std::string::String, AgentError> {
    let _ = (db, ctx);
    ::core::result::Result::Ok(input.id)
}

#[::carmy::resource(uri = "shop://brand/logo.png")]
async fn logo(ctx: Context) -> ::core::result::Result<::std::vec::Vec<u8>, AgentError> {
    let _ = ctx;
    ::core::result::Result::Ok(::std::vec::Vec::new())
}

fn main() {
    Carmy::new()
        .resource(product)
        .resource(logo)
        .state(Db)
        .build()
        .unwrap();
    let _ = product(
        State::new(Db),
        ProductRef { id: "sku-1".into() },
        &Context::new(),
    );
    let _ = logo::call(Context::new());
}
