//! Each key of `#[tool(...)]`, each rule between them, and the checked function they make.

use std::time::Duration;

use super::{
    ToolArgs, ToolDef,
    values::{Confirmation, Effect, TaskSupport},
};
use crate::{
    function::{Arguments, Failure, Fallback},
    test_util::errors_of,
};

fn parse(source: &str) -> syn::Result<ToolArgs> {
    ToolArgs::parse(source.parse().unwrap())
}

fn arg_errors(source: &str) -> Vec<(String, String)> {
    errors_of(source, parse(source).err().expect("expected an error"))
}

fn tool(args: &str, item: &str) -> Result<ToolDef, Failure<ToolArgs>> {
    ToolDef::new(args.parse().unwrap(), item.parse().unwrap())
}

fn error(args: &str, item: &str) -> Failure<ToolArgs> {
    tool(args, item).err().expect("expected an error")
}

fn checked(args: &str, item: &str) -> ToolDef {
    tool(args, item).unwrap_or_else(|failure| panic!("{}", failure.error))
}

const SEARCH: &str = "/// Search the catalog.\n#[cfg(feature = \"shop\")]\n#[tracing::instrument]\n\
                      pub async fn search(input: SearchInput) -> Result<SearchOutput, AgentError> { todo!() }";

#[test]
fn the_minimal_attribute_is_an_effect() {
    let args = parse(r#"effect = "read""#).unwrap();
    assert_eq!(args.effect, Effect::Read);
    assert_eq!(args.idempotent, None);
    assert_eq!(args.parallel_safe, None);
    assert_eq!(args.confirmation, None);
    assert_eq!((args.task, args.task_after), (None, None));
    let common = &args.common;
    assert!(common.name.is_none() && common.title.is_none() && common.description.is_none());
    assert_eq!(common.timeout, None);
    assert!(common.krate.is_none());
}

#[test]
fn every_key_is_read() {
    let args = parse(
        r#"effect = "external_write", idempotent, parallel_safe = false,
           confirmation = "required", task = "optional", task_after = "2s",
           name = "orders.create", title = "Create an order",
           description = "Creates an order.", timeout = "1m 30s", crate = "::renamed","#,
    )
    .unwrap();
    assert_eq!(args.effect, Effect::ExternalWrite);
    assert_eq!(args.task, Some(TaskSupport::Optional));
    assert_eq!(args.task_after, Some(Duration::from_secs(2)));
    assert_eq!(args.idempotent, Some(true));
    assert_eq!(args.parallel_safe, Some(false));
    assert_eq!(args.confirmation, Some(Confirmation::Required));
    let common = args.common;
    assert_eq!(common.name.unwrap().value(), "orders.create");
    assert_eq!(common.title.unwrap().value(), "Create an order");
    assert_eq!(common.description.unwrap().value(), "Creates an order.");
    assert_eq!(common.timeout, Some(Duration::from_secs(90)));
    let krate = common.krate.unwrap();
    assert_eq!(quote::quote!(#krate).to_string(), ":: renamed");
}

#[test]
fn every_effect_and_confirmation_parses() {
    for effect in Effect::ALL {
        let args = parse(&format!("effect = {:?}", effect.as_str())).unwrap();
        assert_eq!(args.effect, effect);
    }
    for confirmation in Confirmation::ALL {
        let source = format!(
            r#"effect = "write", confirmation = {:?}"#,
            confirmation.as_str()
        );
        assert_eq!(parse(&source).unwrap().confirmation, Some(confirmation));
    }
}

#[test]
fn task_support_and_task_after_are_read() {
    for task in TaskSupport::ALL {
        let source = format!(r#"effect = "read", task = {:?}"#, task.as_str());
        assert_eq!(parse(&source).unwrap().task, Some(task));
    }
    let args = parse(r#"effect = "read", task = "required", task_after = "250ms""#).unwrap();
    assert_eq!(args.task_after, Some(Duration::from_millis(250)));
    assert_eq!(
        arg_errors(r#"effect = "read", task = "sometimes""#),
        [(
            "unknown task support `sometimes`; expected one of `optional`, `required`, \
             `forbidden`"
                .to_owned(),
            r#""sometimes""#.to_owned()
        )]
    );
}

#[test]
fn task_after_needs_a_tool_that_may_run_as_a_task() {
    let message = "`task_after` applies to a tool whose calls may become tasks; add \
                   `task = \"optional\"` or `task = \"required\"`";
    for source in [
        r#"effect = "read", task_after = "1s""#,
        r#"effect = "read", task = "forbidden", task_after = "1s""#,
    ] {
        assert_eq!(
            arg_errors(source),
            [(message.to_owned(), "task_after".to_owned())],
            "{source}"
        );
    }
    // A wrong `task` is reported once, not blamed on `task_after` too.
    let errors = arg_errors(r#"effect = "read", task = "maybe", task_after = "1s""#);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let errors = arg_errors(r#"effect = "read", task = "optional", task_after = "0s""#);
    assert!(
        errors[0]
            .0
            .starts_with("`task_after` must be greater than zero")
    );
}

#[test]
fn idempotent_is_a_flag_or_a_bool() {
    let idempotent = |source| parse(source).unwrap().idempotent;
    assert_eq!(idempotent(r#"effect = "write", idempotent"#), Some(true));
    assert_eq!(
        idempotent(r#"effect = "write", idempotent = true"#),
        Some(true)
    );
    assert_eq!(
        idempotent(r#"effect = "write", idempotent = false"#),
        Some(false)
    );
}

#[test]
fn transactional_is_a_flag_for_tools_that_write() {
    let transactional = |source| parse(source).unwrap().transactional.map(|(on, _)| on);
    assert_eq!(
        transactional(r#"effect = "write", transactional"#),
        Some(true)
    );
    assert_eq!(
        transactional(r#"effect = "destructive", transactional = true"#),
        Some(true)
    );
    assert_eq!(
        transactional(r#"effect = "read", transactional = false"#),
        Some(false)
    );
    assert_eq!(transactional(r#"effect = "write""#), None);
    for effect in ["none", "read", "external_write"] {
        let errors = arg_errors(&format!(r#"effect = "{effect}", transactional"#));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .0
                .ends_with(&format!("this tool's effect is `{effect}`")),
            "{errors:?}"
        );
        assert_eq!(errors[0].1, "transactional");
    }
}

#[test]
fn a_missing_effect_is_reported_on_the_attribute() {
    let error = parse("idempotent").err().unwrap();
    assert!(error.to_string().starts_with("missing `effect`"), "{error}");
    assert!(parse("").is_err());
}

#[test]
fn an_unknown_effect_lists_the_effects() {
    assert_eq!(
        arg_errors(r#"effect = "mutate""#),
        [(
            "unknown effect `mutate`; expected one of `none`, `read`, `write`, \
             `destructive`, `external_write`"
                .to_owned(),
            r#""mutate""#.to_owned()
        )]
    );
}

#[test]
fn a_misspelt_value_suggests_the_closest() {
    let cases = [
        (r#"effect = "reed""#, "effect", "reed", "read"),
        (r#"effect = "Write""#, "effect", "Write", "write"),
        (
            r#"effect = "external-write""#,
            "effect",
            "external-write",
            "external_write",
        ),
        (
            r#"effect = "write", confirmation = "require""#,
            "confirmation",
            "require",
            "required",
        ),
        (
            r#"effect = "read", task = "optinal""#,
            "task support",
            "optinal",
            "optional",
        ),
    ];
    for (source, what, written, meant) in cases {
        let errors = arg_errors(source);
        assert_eq!(errors.len(), 1, "{source}: {errors:?}");
        let start =
            format!("unknown {what} `{written}`; did you mean `{meant}`? (expected one of `");
        assert!(errors[0].0.starts_with(&start), "{source}: {}", errors[0].0);
        assert_eq!(errors[0].1, format!("{written:?}"), "{source}");
    }
}

#[test]
fn an_unknown_key_lists_the_tool_keys() {
    let errors = arg_errors(r#"effect = "read", retries = 3"#);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].0,
        "unknown key `retries`; expected one of `effect`, `idempotent`, `transactional`, \
         `parallel_safe`, `confirmation`, `task`, `task_after`, `rate_limit`, `name`, `title`, \
         `description`, `timeout`, `crate`"
    );
    assert_eq!(errors[0].1, "retries");
}

#[test]
fn a_misspelt_key_suggests_the_closest() {
    for (written, meant) in [
        ("idempotnet", "idempotent"),
        ("efect", "effect"),
        ("paralel_safe", "parallel_safe"),
        ("timout", "timeout"),
        ("rate_limits", "rate_limit"),
        ("Title", "title"),
    ] {
        let errors = arg_errors(&format!(r#"effect = "read", {written}"#));
        assert_eq!(errors.len(), 1, "{written}: {errors:?}");
        assert_eq!(
            errors[0].0,
            format!(
                "unknown key `{written}`; did you mean `{meant}`? (expected one of \
                 `effect`, `idempotent`, `transactional`, `parallel_safe`, `confirmation`, \
                 `task`, `task_after`, `rate_limit`, `name`, `title`, `description`, \
                 `timeout`, `crate`)"
            )
        );
        assert_eq!(errors[0].1, written);
    }
}

#[test]
fn values_of_the_wrong_type_are_reported_on_the_value() {
    let errors = arg_errors(
        r#"effect = read, idempotent = "yes", parallel_safe, timeout = 30, name = true"#,
    );
    let messages: Vec<_> = errors.iter().map(|(message, _)| message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "expected a string for `effect`; write `effect = \"read\"`",
            "expected `true` or `false` for `idempotent`; write `idempotent`, \
             `idempotent = true` or `idempotent = false`",
            "expected a boolean; write `parallel_safe = true` or `parallel_safe = false`",
            "expected a string for `timeout`, as in `timeout = \"...\"`",
            "expected a string for `name`, as in `name = \"...\"`",
        ]
    );
    let covered: Vec<_> = errors.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(covered, ["read", r#""yes""#, "parallel_safe", "30", "true"]);
}

#[test]
fn all_errors_are_collected() {
    let errors = arg_errors(
        r#"effect = "reed", confirmation = "maybe", name = "no spaces", timeout = "0s", crate = "not a path", colour = "red""#,
    );
    let covered: Vec<_> = errors.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(
        covered,
        [
            r#""reed""#,
            r#""maybe""#,
            r#""no spaces""#,
            r#""0s""#,
            r#""not a path""#,
            "colour"
        ]
    );
    assert_eq!(
        errors[1].0,
        "unknown confirmation `maybe`; expected one of `required`, `none`"
    );
    assert!(
        errors[0]
            .0
            .starts_with("unknown effect `reed`; did you mean `read`?"),
        "{}",
        errors[0].0
    );
    assert!(errors[2].0.starts_with("invalid tool name `no spaces`"));
    assert!(
        errors[4]
            .0
            .contains("expected the path to the `carmy` crate")
    );
}

#[test]
fn names_and_descriptions_default_to_the_function() {
    let tool = checked(r#"effect = "read""#, SEARCH);
    assert_eq!(tool.name, "search");
    assert_eq!(tool.description.as_deref(), Some("Search the catalog."));
    let item = &tool.item;
    assert_eq!(
        (
            item.docs().count(),
            item.cfgs().count(),
            item.fn_attrs().count()
        ),
        (1, 1, 1)
    );

    let tool = checked(
        r#"effect = "read", name = "catalog.search", description = "Find products.""#,
        SEARCH,
    );
    assert_eq!(tool.name, "catalog.search");
    assert_eq!(tool.description.as_deref(), Some("Find products."));
}

#[test]
fn raw_identifiers_lose_their_prefix() {
    let tool = checked(
        r#"effect = "none""#,
        "async fn r#type() -> Result<(), E> {}",
    );
    assert_eq!(tool.name, "type");
    assert_eq!(tool.description, None);
}

#[test]
fn a_function_name_mcp_refuses_needs_an_explicit_name() {
    let item = "async fn café() -> Result<(), E> {}";
    let failure = error(r#"effect = "none""#, item);
    assert!(failure.fallback.expanded().is_some());
    let errors = errors_of(item, failure.error);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].1, "café");
    assert!(
        errors[0].0.starts_with(
            "the function name `café` is not a valid tool name: 'é' is not allowed; \
             set one with `#[tool(name = \"...\")]`"
        ),
        "{}",
        errors[0].0
    );
    assert!(tool(r#"effect = "none", name = "cafe""#, item).is_ok());
    // The rule waits for the arguments: with `effect` wrong, `name` is not known to be
    // absent, so only `effect` is reported.
    let failure = error(r#"effect = "nope", name = "cafe""#, item);
    assert_eq!(failure.error.into_iter().count(), 1);
}

#[test]
fn argument_and_signature_errors_are_reported_together() {
    let failure = error(r#"effect = "reed""#, "fn search(a: A, b: B) {}");
    assert!(
        matches!(failure.fallback, Fallback::StandIn(_)),
        "a bad signature gets a stand-in"
    );
    let messages: Vec<_> = failure.error.into_iter().map(|e| e.to_string()).collect();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert!(messages[0].starts_with("unknown effect `reed`"));
    assert!(messages[1].starts_with("a tool must be an `async fn`"));
}

#[test]
fn argument_errors_still_expand_the_tool_with_defaults() {
    let failure = error(r#"effect = "reed", idempotent = "yes""#, SEARCH);
    assert_eq!(failure.error.into_iter().count(), 2);
    let fallback = failure.fallback.expanded().expect("the signature is fine");
    assert_eq!(fallback.name, "search");
    assert_eq!(fallback.args.idempotent, None);
    assert!(fallback.args.common.krate.is_none());

    let failure = error(r#"effect = "reed", crate = "::renamed""#, SEARCH);
    assert!(
        failure
            .fallback
            .expanded()
            .unwrap()
            .args
            .common
            .krate
            .is_some()
    );
    // Without a trustworthy crate path the expansion would not resolve.
    assert!(
        error(r#"crate = "x y""#, SEARCH)
            .fallback
            .expanded()
            .is_none()
    );
}
