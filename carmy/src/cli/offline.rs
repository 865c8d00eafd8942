//! The subcommands that run in process, without a configuration: `tools`, `resources`,
//! `prompts`, `schema` and `call`.

use std::process::ExitCode;

use clap::ArgMatches;

use carmy_core::{Context, Runtime};

use super::commands;

/// `tools`, `resources`, `prompts`, `schema` and `call`.
pub(super) async fn offline(
    runtime: &Runtime,
    context: Context,
    subcommand: &str,
    sub: &ArgMatches,
) -> ExitCode {
    match subcommand {
        "tools" => commands::tools(runtime, sub.get_flag("json")),
        "resources" => commands::resources(runtime, sub.get_flag("json")).await,
        "prompts" => commands::prompts(runtime, sub.get_flag("json")),
        "schema" => commands::schema(
            runtime,
            string(sub, "name"),
            sub.get_one::<String>("kind").map(String::as_str),
        ),
        "call" => {
            commands::call(
                runtime,
                context,
                string(sub, "tool"),
                string(sub, "arguments"),
                sub.get_one::<String>("request-id").map(String::as_str),
            )
            .await
        }
        other => unreachable!("unknown subcommand {other}"),
    }
}

fn string<'a>(matches: &'a ArgMatches, id: &str) -> &'a str {
    matches
        .get_one::<String>(id)
        .map(String::as_str)
        .unwrap_or_default()
}

/// The context of `call`: `context` with its `--grant` and `--principal`.
pub(super) fn host_context(mut context: Context, matches: &ArgMatches) -> Context {
    let has = |id: &str| matches.try_get_raw(id).is_ok_and(|raw| raw.is_some());
    if has("grant") {
        context = context.with_grants(
            matches
                .get_many::<String>("grant")
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    if has("principal")
        && let Some(principal) = matches.get_one::<String>("principal")
    {
        context = context.with_principal(principal.as_str());
    }
    context
}
