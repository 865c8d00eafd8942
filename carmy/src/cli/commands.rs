//! What each subcommand does.

use std::process::ExitCode;

use carmy_core::{
    CancellationToken, Catalog, Context, PromptEntry, Request, ResourceEntry, Runtime, ToolEntry,
};
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

/// The catalog's resources and templates, then what its providers serve now (the files of a
/// directory), as a client listing them would see them.
pub(super) async fn resources(runtime: &Runtime, json: bool) -> ExitCode {
    let provided = match runtime.list_provided(&CancellationToken::new()).await {
        Ok(provided) => provided,
        Err(error) => {
            eprintln!("error: cannot list the resources its providers serve: {error}");
            return ExitCode::FAILURE;
        }
    };
    let catalog = runtime.catalog();
    let text = if json {
        let resources: Vec<Value> = catalog
            .resources()
            .map(render::resource_json)
            .chain(provided.iter().map(render::provided_json))
            .collect();
        pretty(&Value::Array(resources))
    } else {
        render::resource_table(catalog, &provided)
    };
    exit_after_printing(&text, ExitCode::SUCCESS)
}

pub(super) fn prompts(runtime: &Runtime, json: bool) -> ExitCode {
    let catalog = runtime.catalog();
    let text = if json {
        let prompts: Vec<Value> = catalog.prompts().map(render::prompt_json).collect();
        pretty(&Value::Array(prompts))
    } else {
        render::prompt_table(catalog)
    };
    exit_after_printing(&text, ExitCode::SUCCESS)
}

/// The schemas of what `name` names: a tool's input and output, a resource's input (the
/// variables of its template), a prompt's input (its arguments). `kind` (`tool`, `resource`,
/// `prompt`) narrows the search, and settles a name that several kinds share.
pub(super) fn schema(runtime: &Runtime, name: &str, kind: Option<&str>) -> ExitCode {
    let catalog = runtime.catalog();
    let found = named(catalog, name, kind);
    let schemas = match found[..] {
        [Named::Tool(entry)] => json!({
            "name": entry.name(),
            "input_schema": &**entry.input_schema(),
            "output_schema": &**entry.output_schema(),
        }),
        [Named::Resource(entry)] => {
            let uri_key = if entry.is_template() {
                "uri_template"
            } else {
                "uri"
            };
            json!({
                "name": entry.name(),
                uri_key: entry.uri(),
                "input_schema": &**entry.input_schema(),
            })
        }
        [Named::Prompt(entry)] => json!({
            "name": entry.name(),
            "input_schema": &**entry.input_schema(),
        }),
        [] => {
            eprintln!("error: {}", not_found(catalog, name, kind));
            return ExitCode::from(USAGE);
        }
        ref several => {
            let kinds: Vec<&str> = several.iter().map(Named::kind).collect();
            eprintln!(
                "error: `{name}` names {}; say which with {}",
                render::and_list(kinds.iter().map(|kind| format!("a {kind}"))),
                render::or_list(kinds.iter().map(|kind| format!("`--kind {kind}`"))),
            );
            return ExitCode::from(USAGE);
        }
    };
    exit_after_printing(&pretty(&schemas), ExitCode::SUCCESS)
}

/// What `schema NAME` may name.
#[derive(Clone, Copy)]
enum Named<'a> {
    Tool(&'a ToolEntry),
    Resource(&'a ResourceEntry),
    Prompt(&'a PromptEntry),
}

impl Named<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Named::Tool(_) => "tool",
            Named::Resource(_) => "resource",
            Named::Prompt(_) => "prompt",
        }
    }
}

/// Everything `name` names (a resource by its URI too), among `kind` alone when given.
fn named<'a>(catalog: &'a Catalog, name: &str, kind: Option<&str>) -> Vec<Named<'a>> {
    let wanted = |candidate: &str| kind.is_none_or(|kind| kind == candidate);
    let mut found = Vec::new();
    if wanted("tool") {
        found.extend(catalog.get(name).map(Named::Tool));
    }
    if wanted("resource") {
        found.extend(
            catalog
                .resources()
                .filter(|entry| entry.name() == name || entry.uri() == name)
                .map(Named::Resource),
        );
    }
    if wanted("prompt") {
        found.extend(catalog.prompt(name).map(Named::Prompt));
    }
    found
}

/// `no tool, resource or prompt named `x`; the tools are: …; the resources are: …`.
fn not_found(catalog: &Catalog, name: &str, kind: Option<&str>) -> String {
    let kinds: [(&str, Vec<&str>); 3] = [
        ("tool", catalog.iter().map(ToolEntry::name).collect()),
        (
            "resource",
            catalog.resources().map(ResourceEntry::name).collect(),
        ),
        ("prompt", catalog.prompts().map(PromptEntry::name).collect()),
    ];
    let looked: Vec<&(&str, Vec<&str>)> = kinds
        .iter()
        .filter(|(candidate, _)| kind.is_none_or(|kind| kind == *candidate))
        .collect();
    let what = render::or_list(looked.iter().map(|(kind, _)| (*kind).to_owned()));
    let lists: Vec<String> = looked
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(kind, names)| format!("the {kind}s are: {}", names.join(", ")))
        .collect();
    if lists.is_empty() {
        format!("no {what} named `{name}`; there are none")
    } else {
        format!("no {what} named `{name}`; {}", lists.join("; "))
    }
}

pub(super) async fn call(
    runtime: &Runtime,
    context: Context,
    tool: &str,
    arguments: &str,
    request_id: Option<&str>,
) -> ExitCode {
    if runtime.catalog().get(tool).is_none() {
        eprintln!(
            "error: {}",
            not_found(runtime.catalog(), tool, Some("tool"))
        );
        return ExitCode::from(USAGE);
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

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use carmy_core::{
        AgentError, Carmy, Effect, Invocation, NoInput, Prompt, PromptSpec, Resource, ResourceSpec,
        Tool, ToolSpec,
    };
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;

    struct Search;
    impl Tool for Search {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("search", Effect::Read);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    /// A tool and a prompt share this name.
    struct HelpTool;
    impl Tool for HelpTool {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("help", Effect::None);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct ProductRef {
        id: String,
    }

    struct Product;
    impl Resource for Product {
        type Input = ProductRef;
        type Output = String;
        const SPEC: ResourceSpec = ResourceSpec::new("product", "shop://products/{id}");
        async fn read(&self, _: ProductRef, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    struct HelpPrompt;
    impl Prompt for HelpPrompt {
        type Input = NoInput;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("help");
        async fn render(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    fn runtime() -> Runtime {
        Carmy::new()
            .tool(Search)
            .tool(HelpTool)
            .resource(Product)
            .prompt(HelpPrompt)
            .build()
            .unwrap()
    }

    #[test]
    fn a_name_is_looked_up_among_every_kind() {
        let runtime = runtime();
        let kinds = |name: &str, kind: Option<&str>| -> Vec<&'static str> {
            named(runtime.catalog(), name, kind)
                .iter()
                .map(Named::kind)
                .collect()
        };
        assert_eq!(kinds("search", None), ["tool"]);
        assert_eq!(kinds("product", None), ["resource"]);
        assert_eq!(kinds("shop://products/{id}", None), ["resource"]);
        assert_eq!(kinds("help", None), ["tool", "prompt"]);
        assert_eq!(kinds("help", Some("prompt")), ["prompt"]);
        assert_eq!(kinds("help", Some("tool")), ["tool"]);
        assert!(kinds("search", Some("resource")).is_empty());
        assert!(kinds("nothing", None).is_empty());
    }

    #[test]
    fn an_unknown_name_lists_what_there_is() {
        let runtime = runtime();
        let catalog = runtime.catalog();
        assert_eq!(
            not_found(catalog, "nothing", None),
            "no tool, resource or prompt named `nothing`; the tools are: search, help; the \
             resources are: product; the prompts are: help"
        );
        assert_eq!(
            not_found(catalog, "nothing", Some("tool")),
            "no tool named `nothing`; the tools are: search, help"
        );
        let empty = Carmy::new().tool(Search).build().unwrap();
        assert_eq!(
            not_found(empty.catalog(), "help", Some("prompt")),
            "no prompt named `help`; there are none"
        );
        assert_eq!(
            not_found(empty.catalog(), "help", None),
            "no tool, resource or prompt named `help`; the tools are: search"
        );
    }
}
