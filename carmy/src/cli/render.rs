//! The catalog (tools, resources, prompts) as tables for people and as JSON for programs, and
//! the one way output reaches stdout.

use std::{
    fmt::Write as _,
    io::{ErrorKind, Write as _},
    process::ExitCode,
};

use carmy_core::{Catalog, Confirmation, PromptEntry, ProvidedResource, ResourceEntry, ToolEntry};
use serde_json::{Value, json};

pub(super) fn tool_json(entry: &ToolEntry) -> Value {
    json!({
        "name": entry.name(),
        "title": entry.title(),
        "description": entry.description(),
        "effect": entry.effect().as_str(),
        "idempotent": entry.idempotent(),
        "parallel_safe": entry.parallel_safe(),
        "confirmation": entry.confirmation().as_str(),
        "timeout_ms": u64::try_from(entry.timeout().as_millis()).unwrap_or(u64::MAX),
        "input_schema": &**entry.input_schema(),
        "output_schema": &**entry.output_schema(),
    })
}

/// A resource of the catalog: `uri` when fixed, `uri_template` with the schema of its
/// variables when a template.
pub(super) fn resource_json(entry: &ResourceEntry) -> Value {
    let mut resource = json!({
        "name": entry.name(),
        "title": entry.title(),
        "description": entry.description(),
        "mime_type": entry.mime_type(),
    });
    if entry.is_template() {
        resource["uri_template"] = json!(entry.uri());
        resource["input_schema"] = json!(&**entry.input_schema());
    } else {
        resource["uri"] = json!(entry.uri());
    }
    resource
}

/// A resource a provider serves.
pub(super) fn provided_json(resource: &ProvidedResource) -> Value {
    json!({
        "name": resource.name(),
        "title": resource.title_text(),
        "description": resource.description_text(),
        "mime_type": resource.mime_type_of(),
        "uri": resource.uri(),
        "size": resource.size_bytes(),
    })
}

pub(super) fn prompt_json(entry: &PromptEntry) -> Value {
    let arguments: Vec<Value> = entry
        .arguments()
        .iter()
        .map(|argument| {
            json!({
                "name": argument.name(),
                "title": argument.title(),
                "description": argument.description(),
                "required": argument.required(),
            })
        })
        .collect();
    json!({
        "name": entry.name(),
        "title": entry.title(),
        "description": entry.description(),
        "arguments": arguments,
        "input_schema": &**entry.input_schema(),
    })
}

pub(super) fn tool_table(catalog: &Catalog) -> String {
    let rows: Vec<[String; 4]> = catalog
        .iter()
        .map(|entry| {
            let mut flags = Vec::new();
            if entry.idempotent() {
                flags.push("idempotent");
            }
            if entry.confirmation() == Confirmation::Required {
                flags.push("confirm");
            }
            if !entry.parallel_safe() {
                flags.push("serial");
            }
            let summary = summary(entry.description(), 72);
            [
                entry.name().to_owned(),
                entry.effect().as_str().to_owned(),
                flags.join(","),
                summary,
            ]
        })
        .collect();
    table(["TOOL", "EFFECT", "POLICY", "DESCRIPTION"], &rows)
}

/// The catalog's resources and templates, then `provided`.
pub(super) fn resource_table(catalog: &Catalog, provided: &[ProvidedResource]) -> String {
    let catalog_rows = catalog.resources().map(|entry| {
        [
            entry.name().to_owned(),
            entry.uri().to_owned(),
            entry.mime_type().unwrap_or_default().to_owned(),
            summary(entry.description(), 72),
        ]
    });
    let provided_rows = provided.iter().map(|resource| {
        [
            resource.name().to_owned(),
            resource.uri().to_owned(),
            resource.mime_type_of().unwrap_or_default().to_owned(),
            summary(resource.description_text().unwrap_or_default(), 72),
        ]
    });
    let rows: Vec<[String; 4]> = catalog_rows.chain(provided_rows).collect();
    table(["RESOURCE", "URI", "MIME TYPE", "DESCRIPTION"], &rows)
}

/// Each prompt with its arguments, the optional ones in brackets.
pub(super) fn prompt_table(catalog: &Catalog) -> String {
    let rows: Vec<[String; 3]> = catalog
        .prompts()
        .map(|entry| {
            let arguments: Vec<String> = entry
                .arguments()
                .iter()
                .map(|argument| {
                    if argument.required() {
                        argument.name().to_owned()
                    } else {
                        format!("[{}]", argument.name())
                    }
                })
                .collect();
            [
                entry.name().to_owned(),
                arguments.join(", "),
                summary(entry.description(), 72),
            ]
        })
        .collect();
    table(["PROMPT", "ARGUMENTS", "DESCRIPTION"], &rows)
}

/// Columns padded to their widest cell, two spaces apart; the last, a description, is not
/// padded, and no line ends in spaces.
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = header.map(str::to_owned);
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(widths).enumerate() {
            if index + 1 < N {
                let _ = write!(line, "{cell:width$}  ");
            } else {
                line.push_str(cell);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// `a`, `a and b`, `a, b and c`.
pub(super) fn and_list(items: impl IntoIterator<Item = String>) -> String {
    joined(items, "and")
}

/// `a`, `a or b`, `a, b or c`.
pub(super) fn or_list(items: impl IntoIterator<Item = String>) -> String {
    joined(items, "or")
}

fn joined(items: impl IntoIterator<Item = String>, last: &str) -> String {
    let mut items: Vec<String> = items.into_iter().collect();
    match items.pop() {
        None => String::new(),
        Some(only) if items.is_empty() => only,
        Some(final_item) => format!("{} {last} {final_item}", items.join(", ")),
    }
}

/// Writes `text` (and a final newline when it lacks one) to stdout, through one lock so that
/// the output is not interleaved with anything else the process prints.
///
/// A reader that stops early (`shop tools | head -1`) closes the pipe and the next write fails
/// with `BrokenPipe`: Rust ignores `SIGPIPE`, so `println!` would panic there. That is not a
/// failure of the command: it did what it was asked and whoever reads chose to stop, so it
/// ends quietly and the command keeps its own status (0, or 1 for a call that failed). We do
/// not imitate the 141 of a process killed by `SIGPIPE`: under `set -o pipefail` that status
/// would fail a script for a pipeline where nothing went wrong, and restoring the signal's
/// default action needs `unsafe`, which this workspace forbids. Any other write error (a full
/// disk, `>/dev/full`) means the output is lost: it is reported and the command fails (`Err`
/// holds the status to exit with).
pub(super) fn print_stdout(text: &str) -> Result<(), ExitCode> {
    let mut stdout = std::io::stdout().lock();
    let written = if text.ends_with('\n') {
        write!(stdout, "{text}")
    } else {
        writeln!(stdout, "{text}")
    };
    match written.and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(error) => {
            eprintln!("error: cannot write the output: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// The first paragraph on one line, cut at a word boundary to at most `max` characters.
fn summary(description: &str, max: usize) -> String {
    let paragraph = description.split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let mut out = String::new();
    for word in words {
        let needed = out.chars().count() + word.chars().count() + usize::from(!out.is_empty());
        if needed > max.saturating_sub(1) {
            out.push('…');
            return out;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
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
        const SPEC: ToolSpec = ToolSpec::new("search", Effect::Read)
            .idempotent(true)
            .description("Search the catalog.\n\nBy prefix.");
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    struct Purge;
    impl Tool for Purge {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("purge_everything", Effect::Destructive);
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
        const SPEC: ResourceSpec = ResourceSpec::new("product", "shop://products/{id}")
            .title("Product")
            .description("One product.")
            .mime_type("application/json");
        async fn read(&self, _: ProductRef, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    struct Returns;
    impl Resource for Returns {
        type Input = NoInput;
        type Output = String;
        const SPEC: ResourceSpec = ResourceSpec::new("returns", "shop://policies/returns");
        async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Review {
        /// The order.
        order_id: String,
        /// What to look at.
        focus: Option<String>,
    }

    struct ReviewOrder;
    impl Prompt for ReviewOrder {
        type Input = Review;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("review_order").description("Review an order.");
        async fn render(&self, _: Review, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    fn catalog() -> carmy_core::Runtime {
        Carmy::new()
            .tool(Search)
            .tool(Purge)
            .resource(Product)
            .resource(Returns)
            .prompt(ReviewOrder)
            .build()
            .unwrap()
    }

    #[test]
    fn the_tool_table_keeps_its_columns() {
        assert_eq!(
            tool_table(catalog().catalog()),
            "TOOL              EFFECT       POLICY          DESCRIPTION\n\
             search            read         idempotent      Search the catalog.\n\
             purge_everything  destructive  confirm,serial\n"
        );
    }

    #[test]
    fn resources_and_templates_are_listed_with_the_served_files() {
        let runtime = catalog();
        let provided = [ProvidedResource::new("file:///srv/faq.md", "faq.md")
            .mime_type("text/markdown")
            .description("Questions.")];
        assert_eq!(
            resource_table(runtime.catalog(), &provided),
            "RESOURCE  URI                      MIME TYPE         DESCRIPTION\n\
             product   shop://products/{id}     application/json  One product.\n\
             returns   shop://policies/returns\n\
             faq.md    file:///srv/faq.md       text/markdown     Questions.\n"
        );
        let mut resources = runtime.catalog().resources();
        let product = resource_json(resources.next().unwrap());
        assert_eq!(product["uri_template"], "shop://products/{id}");
        assert_eq!(product["title"], "Product");
        assert_eq!(product["input_schema"]["required"], json!(["id"]));
        assert!(product.get("uri").is_none(), "{product:#}");
        let returns = resource_json(resources.next().unwrap());
        assert_eq!(returns["uri"], "shop://policies/returns");
        assert!(returns.get("input_schema").is_none(), "{returns:#}");
        let faq = provided_json(&provided[0]);
        assert_eq!(
            (&faq["uri"], &faq["mime_type"], &faq["size"]),
            (
                &json!("file:///srv/faq.md"),
                &json!("text/markdown"),
                &Value::Null
            )
        );
    }

    #[test]
    fn prompts_are_listed_with_their_arguments() {
        let runtime = catalog();
        assert_eq!(
            prompt_table(runtime.catalog()),
            "PROMPT        ARGUMENTS          DESCRIPTION\n\
             review_order  order_id, [focus]  Review an order.\n"
        );
        let review = prompt_json(runtime.catalog().prompts().next().unwrap());
        assert_eq!(
            review["arguments"],
            json!([
                { "name": "order_id", "title": null, "description": "The order.", "required": true },
                { "name": "focus", "title": null, "description": "What to look at.", "required": false },
            ])
        );
        assert_eq!(review["input_schema"]["type"], "object");
    }

    #[test]
    fn lists_read_as_sentences() {
        let words = |words: &[&str]| {
            words
                .iter()
                .map(|word| (*word).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(and_list(words(&[])), "");
        assert_eq!(and_list(words(&["a"])), "a");
        assert_eq!(and_list(words(&["a", "b"])), "a and b");
        assert_eq!(or_list(words(&["a", "b", "c"])), "a, b or c");
    }

    #[test]
    fn summaries_fit_a_terminal_line() {
        assert_eq!(summary("Short.", 72), "Short.");
        assert_eq!(
            summary("One two\nthree.\n\nSecond paragraph.", 72),
            "One two three."
        );
        assert_eq!(summary("aaa bbb ccc", 8), "aaa bbb…");
    }
}
