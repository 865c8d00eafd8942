//! Whether a tool may run as a task: the tool's declaration, the counterpart of its effect.

use std::fmt;

/// Whether a tool's calls may become tasks (`#[tool(task = "...")]`).
///
/// A call becomes a task only when its caller can follow one (it says so on the request,
/// [`Request::allow_task`](crate::Request::allow_task)); the tool decides whether it may, or
/// must.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: every call is answered in the call (the default).
    #[default]
    Forbidden,
    /// A task when the caller can follow one, a plain call otherwise.
    Optional,
    /// Only a task: a caller that cannot follow one is refused (`TASK_REQUIRED`) before
    /// anything runs.
    Required,
}

impl TaskSupport {
    /// `forbidden`, `optional` or `required`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }

    /// Whether a call may become a task.
    pub const fn allows_tasks(self) -> bool {
        !matches!(self, Self::Forbidden)
    }
}

impl fmt::Display for TaskSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
