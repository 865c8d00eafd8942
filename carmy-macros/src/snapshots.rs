//! Snapshot tests of the expansion, formatted as `cargo expand` shows it.
//!
//! Each `tests/expand/NAME.rs` holds one `#[tool(..)]`, `#[resource(..)]` or `#[prompt(..)]`
//! function (and, for the reader, the items it uses); `NAME.expanded.rs` beside it is what the
//! macro turns the function into, formatted by prettyplease. The test fails when the expansion
//! changes. Regenerate with `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`, then
//! read the diff as you would a `.stderr` file: the expansion is documentation.

use std::{fs, path::Path};

use quote::ToTokens;

use crate::{expand, prompt::PromptDef, resource::ResourceDef, tool::ToolDef};

/// The annotated function of `source`, expanded and formatted, after the attribute's name.
fn expand_file(source: &str) -> (&'static str, String) {
    let file = syn::parse_file(source).expect("the case is valid Rust");
    let mut functions = file.items.into_iter().filter_map(|item| match item {
        syn::Item::Fn(mut function) => {
            let (index, attribute) =
                function
                    .attrs
                    .iter()
                    .enumerate()
                    .find_map(|(index, attr)| {
                        let last = &attr.path().segments.last()?.ident;
                        ["tool", "resource", "prompt"]
                            .into_iter()
                            .find(|name| last == name)
                            .map(|name| (index, name))
                    })?;
            let attr = function.attrs.remove(index);
            let args = match attr.meta {
                syn::Meta::List(list) => list.tokens,
                _ => panic!("write the attribute as `#[{attribute}(..)]`"),
            };
            Some((attribute, args, function.into_token_stream()))
        }
        _ => None,
    });
    let (attribute, args, item) = functions
        .next()
        .expect("a `#[tool(..)]`, `#[resource(..)]` or `#[prompt(..)]`");
    assert!(
        functions.next().is_none(),
        "one annotated function per case"
    );

    let tokens = match attribute {
        "tool" => {
            let tool =
                ToolDef::new(args, item).unwrap_or_else(|failure| panic!("{}", failure.error));
            expand::tool(&tool)
        }
        "resource" => {
            let resource =
                ResourceDef::new(args, item).unwrap_or_else(|failure| panic!("{}", failure.error));
            expand::resource(&resource)
        }
        _ => {
            let prompt =
                PromptDef::new(args, item).unwrap_or_else(|failure| panic!("{}", failure.error));
            expand::prompt(&prompt)
        }
    };
    let expanded: syn::File = syn::parse2(tokens).expect("the expansion parses");
    (attribute, prettyplease::unparse(&expanded))
}

#[test]
fn expansions_match_their_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let overwrite = std::env::var_os("CARMY_EXPAND").is_some_and(|value| value == "overwrite");
    let mut cases: Vec<_> = fs::read_dir(&dir)
        .expect("tests/expand exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| {
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("");
            name.ends_with(".rs") && !name.ends_with(".expanded.rs")
        })
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no cases in {}", dir.display());

    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let snapshot = case.with_extension("expanded.rs");
        let source = fs::read_to_string(&case).expect("readable");
        let (attribute, expanded) = expand_file(&source);
        let actual = format!(
            "// `#[{attribute}]` on the function of {name}, formatted. Regenerate with\n\
             // `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.\n\n{expanded}",
        );
        match fs::read_to_string(&snapshot) {
            Ok(expected) if expected == actual => {}
            _ if overwrite => fs::write(&snapshot, actual).expect("writable"),
            Ok(expected) => failures.push(format!(
                "{name}: the expansion changed{}",
                first_difference(&expected, &actual)
            )),
            Err(_) => {
                fs::write(&snapshot, actual).expect("writable");
                failures.push(format!(
                    "{name}: new snapshot written to {}; review it and run again",
                    snapshot.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(if the change is intended: CARMY_EXPAND=overwrite cargo test -p carmy-macros \
         snapshots, then review the diff)",
        failures.join("\n")
    );
}

/// Where two texts part, by line.
fn first_difference(expected: &str, actual: &str) -> String {
    let mut expected_lines = expected.lines();
    let mut actual_lines = actual.lines();
    for line in 1.. {
        match (expected_lines.next(), actual_lines.next()) {
            (None, None) => break,
            (expected, actual) if expected == actual => {}
            (expected, actual) => {
                return format!(
                    " at line {line}:\n  snapshot: {}\n  now:      {}",
                    expected.unwrap_or("<end>"),
                    actual.unwrap_or("<end>")
                );
            }
        }
    }
    String::new()
}
