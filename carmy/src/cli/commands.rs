//! What each subcommand does.

use std::process::ExitCode;

use carmy_core::{Context, Request, Runtime};
use serde_json::{Value, json};

use super::render;

const USAGE: u8 = 2;

/// Serves `server` on stdin/stdout until the client leaves.
pub(super) async fn mcp(server: carmy_mcp::McpServer) -> ExitCode {
    match server.serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "the MCP server stopped");
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

pub(super) fn tools(runtime: &Runtime, json: bool) -> ExitCode {
    let text = if json {
        let tools: Vec<Value> = runtime.catalog().iter().map(render::tool_json).collect();
        pretty(&Value::Array(tools))
    } else {
        render::tool_table(runtime.catalog())
    };
    exit_after_printing(&text, ExitCode::SUCCESS)
}

pub(super) fn schema(runtime: &Runtime, tool: &str) -> ExitCode {
    let Some(entry) = runtime.catalog().get(tool) else {
        return unknown_tool(runtime, tool);
    };
    let schemas = json!({
        "name": entry.name(),
        "input_schema": &**entry.input_schema(),
        "output_schema": &**entry.output_schema(),
    });
    exit_after_printing(&pretty(&schemas), ExitCode::SUCCESS)
}

pub(super) async fn call(
    runtime: &Runtime,
    context: Context,
    tool: &str,
    arguments: &str,
    request_id: Option<&str>,
) -> ExitCode {
    if runtime.catalog().get(tool).is_none() {
        return unknown_tool(runtime, tool);
    }
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("error: the arguments are not JSON: {error}");
            eprintln!("hint: quote them for the shell, e.g. '{{\"query\": \"mouse\"}}'");
            return ExitCode::from(USAGE);
        }
    };
    let mut request = Request::new(tool, arguments).context(context);
    if let Some(request_id) = request_id {
        request = request.request_id(request_id);
    }
    let outcome = runtime.execute(request).await;
    let mut printed = json!({
        "execution_id": outcome.execution_id,
        "status": outcome.status.as_str(),
    });
    let failed = outcome.result.is_err();
    match outcome.result {
        Ok(output) => printed["output"] = output,
        Err(error) => printed["error"] = serde_json::to_value(&error).unwrap_or_default(),
    }
    // The call has run (and may have changed the world) whether or not anyone reads its
    // outcome, so a closed stdout leaves its status as it is.
    let status = if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    exit_after_printing(&pretty(&printed), status)
}

/// `status` once `text` is printed (or its reader has gone), the failure of the write otherwise.
pub(super) fn exit_after_printing(text: &str, status: ExitCode) -> ExitCode {
    match render::print_stdout(text) {
        Ok(()) => status,
        Err(failed) => failed,
    }
}

fn unknown_tool(runtime: &Runtime, tool: &str) -> ExitCode {
    let names: Vec<&str> = runtime.catalog().iter().map(|entry| entry.name()).collect();
    eprintln!(
        "error: no tool named `{tool}`; the tools are: {}",
        names.join(", ")
    );
    ExitCode::from(USAGE)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
