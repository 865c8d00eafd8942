//! The values of the keys that pick one of a few: `effect`, `confirmation` and `task`, each
//! mirroring its `carmy_core` type, and how each is read.

use syn::Meta;

use crate::args;

/// `effect = "..."`, mirroring `carmy_core::Effect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    None,
    Read,
    Write,
    Destructive,
    ExternalWrite,
}

impl Effect {
    pub(super) const ALL: [Effect; 5] = [
        Effect::None,
        Effect::Read,
        Effect::Write,
        Effect::Destructive,
        Effect::ExternalWrite,
    ];

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Effect::None => "none",
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
            Effect::ExternalWrite => "external_write",
        }
    }

    /// The name of the `carmy_core::Effect` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Effect::None => "None",
            Effect::Read => "Read",
            Effect::Write => "Write",
            Effect::Destructive => "Destructive",
            Effect::ExternalWrite => "ExternalWrite",
        }
    }
}

/// `confirmation = "..."`, mirroring `carmy_core::Confirmation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Confirmation {
    Required,
    None,
}

impl Confirmation {
    pub(super) const ALL: [Confirmation; 2] = [Confirmation::Required, Confirmation::None];

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Confirmation::Required => "required",
            Confirmation::None => "none",
        }
    }

    /// The name of the `carmy_core::Confirmation` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Confirmation::Required => "Required",
            Confirmation::None => "None",
        }
    }
}

/// `task = "..."`, mirroring `carmy_core::TaskSupport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskSupport {
    Optional,
    Required,
    Forbidden,
}

impl TaskSupport {
    pub(super) const ALL: [TaskSupport; 3] = [
        TaskSupport::Optional,
        TaskSupport::Required,
        TaskSupport::Forbidden,
    ];

    pub(super) fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
            TaskSupport::Forbidden => "forbidden",
        }
    }

    /// The name of the `carmy_core::TaskSupport` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            TaskSupport::Optional => "Optional",
            TaskSupport::Required => "Required",
            TaskSupport::Forbidden => "Forbidden",
        }
    }
}

pub(super) fn parse_effect(meta: &Meta) -> syn::Result<Effect> {
    args::one_of(meta, "effect", &Effect::ALL, Effect::as_str)
}

pub(super) fn parse_task(meta: &Meta) -> syn::Result<TaskSupport> {
    args::one_of(meta, "task support", &TaskSupport::ALL, TaskSupport::as_str)
}

pub(super) fn parse_confirmation(meta: &Meta) -> syn::Result<Confirmation> {
    args::one_of(
        meta,
        "confirmation",
        &Confirmation::ALL,
        Confirmation::as_str,
    )
}
