//! Runtime limits, each with a safe default.

use std::time::Duration;

/// The longest tool name MCP allows: a longer name names no tool.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// The longest request id accepted, in bytes: a longer one is refused (`INVALID_REQUEST_ID`)
/// before anything is claimed or kept.
pub const MAX_REQUEST_ID_LEN: usize = 256;

/// Bounds the runtime enforces on every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The deadline of a tool that sets no `timeout` of its own (default 60 s).
    pub default_timeout: Duration,
    /// Executions running at once, across all tools (default 1,024). Past it, calls are refused
    /// with `CAPACITY` (retryable) instead of queueing without bound.
    pub max_concurrent_executions: usize,
    /// Deepest nesting of arrays and objects accepted in arguments (default 64).
    pub max_argument_depth: usize,
    /// Finished executions whose status stays queryable through `Runtime::execution`
    /// (default 1,024).
    pub execution_history: usize,
    /// How long a call's approver may take to answer (default 2 minutes): a human asked to
    /// confirm who does not answer in time leaves the call refused with
    /// `CONFIRMATION_TIMEOUT` (retryable: calling again asks again), not waiting forever.
    pub approval_timeout: Duration,
    /// How long a task is kept once it ended (default 1 hour): its owner may read its outcome
    /// until then.
    pub task_ttl: Duration,
    /// How often a task's owner is told to look at it (default 500 ms).
    pub task_poll_interval: Duration,
    /// The lease the replica running a task holds on it (default 30 s), renewed every third of
    /// it: a replica that dies leaves the task `failed` at most this long after.
    pub task_lease: Duration,
    /// The largest result handed back, in bytes (default 8 MiB): a tool's output as JSON, a
    /// read's contents, a prompt's messages, a completion's values (text as UTF-8, bytes as
    /// base64). Past it the result is dropped and the execution fails with
    /// `OUTPUT_TOO_LARGE`.
    pub max_result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(60),
            max_concurrent_executions: 1024,
            max_argument_depth: 64,
            execution_history: 1024,
            approval_timeout: Duration::from_secs(120),
            task_ttl: Duration::from_secs(60 * 60),
            task_poll_interval: Duration::from_millis(500),
            task_lease: Duration::from_secs(30),
            // Above the largest file a directory serves (4 MiB, 5.4 MiB as base64), and beyond
            // what any model's context holds.
            max_result_bytes: 8 << 20,
        }
    }
}

impl Limits {
    /// Replaces the default deadline.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Replaces the concurrency bound.
    #[must_use]
    pub fn with_max_concurrent_executions(mut self, max: usize) -> Self {
        self.max_concurrent_executions = max;
        self
    }

    /// Replaces the nesting bound.
    #[must_use]
    pub fn with_max_argument_depth(mut self, depth: usize) -> Self {
        self.max_argument_depth = depth;
        self
    }

    /// Replaces how long an approver may take to answer.
    #[must_use]
    pub fn with_approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Replaces how long tasks are kept once ended.
    #[must_use]
    pub fn with_task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// Replaces the poll interval suggested to tasks' owners.
    #[must_use]
    pub fn with_task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_poll_interval = interval;
        self
    }

    /// Replaces the lease on a running task.
    #[must_use]
    pub fn with_task_lease(mut self, lease: Duration) -> Self {
        self.task_lease = lease;
        self
    }

    /// Replaces the bound on a result's size.
    #[must_use]
    pub fn with_max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Replaces the size of the execution history.
    #[must_use]
    pub fn with_execution_history(mut self, len: usize) -> Self {
        self.execution_history = len;
        self
    }
}
