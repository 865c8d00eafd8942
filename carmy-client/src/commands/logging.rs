//! `set-log-level`: 2025-11-25's `logging/setLevel`.
//!
//! The request is sent as asked whatever the lifecycle: a 2026-07-28 server answers that the
//! method does not exist (that revision carries the level in each request's `_meta`), and the
//! error says where to go instead rather than carmy guessing on the server's behalf.

// MCP logging is deprecated by SEP-2577, yet it is what 2025-11-25 servers speak.
#![allow(deprecated)]

use rmcp::model::SetLevelRequestParams;

use super::{Run, tools::logging_level};
use crate::{
    args::SetLogLevel,
    exit::{Failure, Outcome},
};

pub(super) async fn set_level(run: &Run, args: &SetLogLevel) -> Outcome {
    let level = logging_level(args.level);
    #[allow(deprecated)]
    let set = run
        .session
        .peer()
        .set_level(SetLevelRequestParams::new(level));
    match run.send("logging/setLevel", set).await {
        Ok(()) => run.print(&serde_json::json!({}), |_| {
            Ok(format!("log level set to {}", level_name(args.level)))
        }),
        Err(Failure::Server(message)) if !run.legacy() => Err(Failure::Server(format!(
            "{message}\nhint: 2026-07-28 has no logging/setLevel; pass --log-level LEVEL to \
             call-tool, or --protocol 2025-11-25"
        ))),
        Err(failure) => Err(failure),
    }
}

fn level_name(level: crate::args::LogLevel) -> String {
    serde_json::to_value(logging_level(level))
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}
