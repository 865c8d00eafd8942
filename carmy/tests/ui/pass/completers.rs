//! Completers in every legal shape: what the user typed or the whole request, `Completions` or
//! a `Vec<String>`, an error of one's own, a path through a module, an associated function, a
//! generic function with its turbofish, one completer for two arguments, and arguments named
//! by a raw identifier or by a string; on prompts and on resource templates.

use carmy::{Completions, prelude::*, execution::CompletionRequest};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Review {
    order_id: String,
    #[serde(rename = "return-id")]
    return_id: Option<String>,
    r#type: Option<String>,
    focus: Option<String>,
    tone: Option<String>,
}

#[derive(Debug)]
struct DbError;

impl From<DbError> for AgentError {
    fn from(_: DbError) -> Self {
        AgentError::unavailable("DB_DOWN", "the database is down")
    }
}

async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["ord-1001", "ord-1002"]))
}

/// The whole request: what was typed, for which argument, the others chosen, the context.
async fn by_request(request: CompletionRequest<'_>) -> Result<Vec<String>, DbError> {
    let principal = request.context().principal().unwrap_or("anyone");
    Ok(vec![format!(
        "{}:{}:{principal}",
        request.argument(),
        request.value()
    )])
}

mod completion {
    pub(crate) async fn kinds(_typed: &str) -> Result<Vec<String>, carmy::AgentError> {
        Ok(vec!["refund".into(), "exchange".into()])
    }
}

struct Tones;

impl Tones {
    async fn all(typed: &'_ str) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(typed, ["friendly", "formal"]))
    }
}

trait Source {
    const VALUES: &'static [&'static str];
}

struct Focuses;

impl Source for Focuses {
    const VALUES: &'static [&'static str] = &["shipping", "billing"];
}

async fn from<S: Source>(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, S::VALUES.iter().copied()))
}

#[prompt(complete(
    order_id = order_ids,
    "return-id" = by_request,
    r#type = completion::kinds,
    focus = from::<Focuses>,
    tone = Tones::all,
))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(input.order_id)
}

#[derive(Deserialize, JsonSchema)]
struct LineRef {
    order: String,
    line: String,
}

/// One completer for two variables.
#[resource(
    uri = "shop://orders/{order}/lines/{line}",
    complete(line = by_request, order = by_request)
)]
async fn order_line(input: LineRef) -> Result<String, AgentError> {
    Ok(format!("{}/{}", input.order, input.line))
}

fn main() {
    Carmy::new()
        .prompt(review_order)
        .resource(order_line)
        .build()
        .unwrap();
}
