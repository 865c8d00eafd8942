//! The first phase: the keys of `#[tool(...)]`, each read on its own into [`ToolArgs`], then
//! the rules between them.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};

use super::{
    rules,
    values::{Confirmation, Effect, TaskSupport, parse_confirmation, parse_effect, parse_task},
};
use crate::{
    args::{self, Common},
    errors::Errors,
    function::Arguments,
    kind::Kind,
    rate_limit::{self, RateLimit},
    timeout,
};

/// The keys `#[tool(...)]` accepts, in the order the docs list them.
const KEYS: &[&str] = &[
    "effect",
    "idempotent",
    "transactional",
    "parallel_safe",
    "confirmation",
    "task",
    "task_after",
    "rate_limit",
    "name",
    "title",
    "description",
    "timeout",
    "crate",
];

/// The checked arguments. Absent optional keys stay `None`, so the generated `ToolSpec` only
/// spells out what the user wrote and the runtime's defaults apply to the rest.
pub(crate) struct ToolArgs {
    pub(crate) effect: Effect,
    pub(crate) idempotent: Option<bool>,
    /// `transactional`, and where it was written (for the rule on its effect).
    pub(crate) transactional: Option<(bool, Span)>,
    pub(crate) parallel_safe: Option<bool>,
    pub(crate) confirmation: Option<Confirmation>,
    pub(crate) task: Option<TaskSupport>,
    /// Already checked to be a valid, non-zero duration, on a tool that may run as a task.
    pub(crate) task_after: Option<Duration>,
    pub(crate) rate_limit: Option<RateLimit>,
    /// `name`, `title`, `description`, `timeout`, `crate`.
    pub(crate) common: Common,
}

impl Arguments for ToolArgs {
    const KIND: Kind = Kind::Tool;

    fn parse(tokens: TokenStream) -> syn::Result<ToolArgs> {
        let mut errors = Errors::default();
        let mut effect = None;
        let mut args = ToolArgs::defaults(Common::default());
        let mut task_after_key = None;
        let seen = args::read(tokens, KEYS, &mut errors, |key, meta| match key {
            "effect" => parse_effect(meta).map(|value| effect = Some(value)),
            "idempotent" => args::bool_value(meta, true).map(|value| args.idempotent = Some(value)),
            "transactional" => args::bool_value(meta, true)
                .map(|value| args.transactional = Some((value, syn::spanned::Spanned::span(meta)))),
            "parallel_safe" => {
                args::bool_value(meta, false).map(|value| args.parallel_safe = Some(value))
            }
            "confirmation" => parse_confirmation(meta).map(|value| args.confirmation = Some(value)),
            "task" => parse_task(meta).map(|value| args.task = Some(value)),
            "task_after" => {
                task_after_key = Some(meta.path().clone());
                args::string_value(meta)
                    .and_then(|lit| timeout::parse_task_after(&lit))
                    .map(|value| args.task_after = Some(value))
            }
            "rate_limit" => args::string_value(meta)
                .and_then(|lit| rate_limit::parse(&lit))
                .map(|value| args.rate_limit = Some(value)),
            shared => args.common.read(Kind::Tool, shared, meta),
        })?;

        // An `effect` that was present but wrong has already been reported.
        if !seen.contains(&"effect") {
            errors.push(syn::Error::new(
                Span::call_site(),
                format!(
                    "missing `effect`; declare what the tool does to the world, e.g. \
                     `#[tool(effect = \"read\")]` (one of {})",
                    args::expected(Effect::ALL.map(Effect::as_str))
                ),
            ));
        }

        // A `task` that was present but wrong has already been reported.
        if let Some(error) =
            rules::task_after_needs_a_task(args.task, seen.contains(&"task"), task_after_key)
        {
            errors.push(error);
        }

        errors.finish()?;
        args.effect = effect.expect("a seen, error-free `effect` has a value");
        rules::transactional_needs_writes(args.transactional, args.effect)?;
        Ok(args)
    }

    fn fallback(tokens: TokenStream) -> Option<ToolArgs> {
        Common::fallback(tokens).map(ToolArgs::defaults)
    }

    fn common(&self) -> &Common {
        &self.common
    }
}

impl ToolArgs {
    fn defaults(common: Common) -> ToolArgs {
        ToolArgs {
            effect: Effect::None,
            idempotent: None,
            transactional: None,
            parallel_safe: None,
            confirmation: None,
            task: None,
            task_after: None,
            rate_limit: None,
            common,
        }
    }
}
