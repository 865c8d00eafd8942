//! The rules between the tool's keys, checked once each key has been read on its own.

use proc_macro2::Span;

use super::values::{Effect, TaskSupport};

/// `task_after` says when a call becomes a task: it means nothing for a tool that never runs as
/// one. `task` is the `task` read, `task_written` whether the key was written at all (a wrong
/// value has already been reported), `task_after` where `task_after` was written, if it was.
pub(super) fn task_after_needs_a_task(
    task: Option<TaskSupport>,
    task_written: bool,
    task_after: Option<syn::Path>,
) -> Option<syn::Error> {
    let never_a_task = match task {
        Some(task) => task == TaskSupport::Forbidden,
        None => !task_written,
    };
    task_after.filter(|_| never_a_task).map(|key| {
        syn::Error::new_spanned(
            key,
            "`task_after` applies to a tool whose calls may become tasks; add \
             `task = \"optional\"` or `task = \"required\"`",
        )
    })
}

/// A transactional tool's effects are its record writes, committed with its outcome: a tool
/// that writes nothing has none to commit, and an `external_write` tool's effects are outside
/// the store. `transactional` is the key's value and where it was written.
pub(super) fn transactional_needs_writes(
    transactional: Option<(bool, Span)>,
    effect: Effect,
) -> syn::Result<()> {
    if let Some((true, span)) = transactional
        && !matches!(effect, Effect::Write | Effect::Destructive)
    {
        return Err(syn::Error::new(
            span,
            format!(
                "`transactional` is for tools whose effect is `write` or `destructive`, whose \
                 writes to `Records` commit with their outcome; this tool's effect is `{}`",
                effect.as_str()
            ),
        ));
    }
    Ok(())
}
