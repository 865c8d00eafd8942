//! One request per run: each command sends it, waits for the answer (or Ctrl-C) and prints it.

mod complete;
mod logging;
mod pagination;
mod ping;
mod prompts;
mod resources;
mod subscribe;
mod tools;

use std::{future::Future, sync::Arc};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::{
    args::Request,
    connect::Session,
    exit::{Failure, Outcome},
    interrupt::Interrupt,
    progress::Stderr,
    timeout::Timeout,
};

/// What every command needs besides its own arguments.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) session: Session,
    pub(crate) json: bool,
    /// `--timeout`, restarted by progress (src/timeout.rs).
    pub(crate) timeout: Arc<Timeout>,
    /// `--max-pages`.
    pub(crate) max_pages: u32,
    pub(crate) stderr: Arc<Stderr>,
    /// `notifications/resources/updated` received by the handler (src/handler.rs).
    pub(crate) updates: mpsc::UnboundedReceiver<String>,
    pub(crate) interrupt: Interrupt,
}

impl Run {
    /// Whether the session follows the 2025-11-25 lifecycle (`initialize`, sessions,
    /// `resources/subscribe`, `logging/setLevel`, `ping`) rather than 2026-07-28's.
    pub(crate) fn legacy(&self) -> bool {
        self.session
            .peer()
            .peer_info()
            .is_none_or(|info| info.protocol_version.has_initialize())
    }

    /// `request` (the `method` named in errors), until `--timeout` of silence or Ctrl-C.
    /// Dropping a request of rmcp's before its answer sends `notifications/cancelled`, so both
    /// ways out cancel it on the server.
    pub(crate) async fn send<T>(
        &self,
        method: &str,
        request: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, Failure> {
        tokio::select! {
            answer = request => answer.map_err(Failure::from_service),
            () = self.timeout.expired() => Err(self.timed_out(method)),
            () = self.interrupt.wait() => Err(Failure::Interrupted),
        }
    }

    /// The failure of a `method` given up on after `--timeout`.
    pub(crate) fn timed_out(&self, method: &str) -> Failure {
        Failure::Timeout(format!(
            "no answer to {method} and no progress for {} s; the request was cancelled \
             (--timeout SECONDS waits longer)",
            self.timeout.limit().as_secs_f64()
        ))
    }

    /// Prints `result` as the server sent it (`--json`), or `human` made from it.
    pub(crate) fn print<T: serde::Serialize>(
        &self,
        result: &T,
        human: impl FnOnce(&T) -> Result<String, Failure>,
    ) -> Outcome {
        let text = if self.json {
            crate::out::json_of(result)
        } else {
            human(result)?
        };
        crate::out::print_once(&text)
    }
}

pub(crate) async fn run(run: &mut Run, request: &Request) -> Outcome {
    match request {
        Request::ListTools => tools::list(run).await,
        Request::CallTool(args) => tools::call(run, args).await,
        Request::ListResources => resources::list(run).await,
        Request::ListTemplates => resources::templates(run).await,
        Request::ReadResource(args) => resources::read(run, args).await,
        Request::Subscribe(args) => subscribe::subscribe(run, args).await,
        Request::ListPrompts => prompts::list(run).await,
        Request::GetPrompt(args) => prompts::get(run, args).await,
        Request::Complete(args) => complete::complete(run, args).await,
        Request::SetLogLevel(args) => logging::set_level(run, args).await,
        Request::Ping => ping::ping(run).await,
    }
}

/// A `-a`/`--context` value: a JSON object, or bad usage.
pub(crate) fn json_object(text: &str, flag: &str) -> Result<Map<String, Value>, Failure> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Failure::Usage(format!(
            "{flag} must be a JSON object, e.g. '{{\"query\": \"mouse\"}}'"
        ))),
        Err(error) => Err(Failure::Usage(format!(
            "{flag} is not JSON ({error}); quote it for the shell, e.g. '{{\"query\": \"mouse\"}}'"
        ))),
    }
}

/// A JSON object of strings (prompt arguments, completion context).
pub(crate) fn string_object(
    text: &str,
    flag: &str,
) -> Result<std::collections::HashMap<String, String>, Failure> {
    json_object(text, flag)?
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(value) => Ok((key, value)),
            other => Err(Failure::Usage(format!(
                "{flag}: `{key}` must be a string (prompt arguments are strings), not {other}"
            ))),
        })
        .collect()
}

/// The JSON of `value` as a `serde_json::Value` (for rendering from what was sent).
pub(crate) fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}
