//! Tools that reach the paths no well-behaved tool does, for tests that drive the testbed
//! binary over its real stdio (`--faulty-tools`): one panics, one breaks its own output schema,
//! one overruns its deadline, and two slow writes report how many executions ran at once.

use std::{
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Tool, ToolSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Adds the faulty tools to `carmy`.
pub(crate) fn register(carmy: Carmy) -> Carmy {
    carmy
        .tool(Panics)
        .tool(Lies)
        .tool(Overruns)
        .tool(Transfer)
        .tool(Restock)
}

/// Panics.
struct Panics;

impl Tool for Panics {
    type Input = NoInput;
    type Output = ();
    const SPEC: ToolSpec = ToolSpec::new("panics", Effect::None).description("Panics.");
    async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
        panic!("a bug in the tool")
    }
}

#[derive(Serialize, JsonSchema)]
struct Small {
    #[schemars(range(max = 10))]
    n: u32,
}

/// Returns what its own output schema forbids.
struct Lies;

impl Tool for Lies {
    type Input = NoInput;
    type Output = Small;
    const SPEC: ToolSpec =
        ToolSpec::new("lies", Effect::None).description("Returns 11 where at most 10 is allowed.");
    async fn run(&self, _: NoInput, _: Invocation) -> Result<Small, AgentError> {
        Ok(Small { n: 11 })
    }
}

/// Never finishes within its 200 ms deadline.
struct Overruns;

impl Tool for Overruns {
    type Input = NoInput;
    type Output = ();
    const SPEC: ToolSpec = ToolSpec::new("overruns", Effect::Read)
        .timeout(Duration::from_millis(200))
        .description("Sleeps past its deadline.");
    async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct WriteInput {
    amount: u32,
    /// How long the write takes, in milliseconds.
    ms: u64,
}

/// What a write saw when it started.
#[derive(Debug, Serialize, JsonSchema)]
struct Written {
    amount: u32,
    /// Executions of this tool running when it started, itself included.
    same_tool_at_once: u32,
    /// Executions of either write tool running when it started, itself included.
    writes_at_once: u32,
}

static TRANSFERS: AtomicU32 = AtomicU32::new(0);
static RESTOCKS: AtomicU32 = AtomicU32::new(0);
static WRITES: AtomicU32 = AtomicU32::new(0);

/// Counts one running execution until dropped (by returning, or by being cancelled).
struct Running(&'static AtomicU32);

impl Running {
    fn start(counter: &'static AtomicU32) -> (Self, u32) {
        (Self(counter), counter.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn write(same: &'static AtomicU32, input: WriteInput) -> Written {
    let (_same, same_tool_at_once) = Running::start(same);
    let (_any, writes_at_once) = Running::start(&WRITES);
    tokio::time::sleep(Duration::from_millis(input.ms)).await;
    Written {
        amount: input.amount,
        same_tool_at_once,
        writes_at_once,
    }
}

/// A slow, non-idempotent write.
struct Transfer;

impl Tool for Transfer {
    type Input = WriteInput;
    type Output = Written;
    const SPEC: ToolSpec =
        ToolSpec::new("transfer", Effect::Write).description("Moves money, slowly.");
    async fn run(&self, input: WriteInput, _: Invocation) -> Result<Written, AgentError> {
        Ok(write(&TRANSFERS, input).await)
    }
}

/// Another slow, non-idempotent write.
struct Restock;

impl Tool for Restock {
    type Input = WriteInput;
    type Output = Written;
    const SPEC: ToolSpec =
        ToolSpec::new("restock", Effect::Write).description("Adds stock, slowly.");
    async fn run(&self, input: WriteInput, _: Invocation) -> Result<Written, AgentError> {
        Ok(write(&RESTOCKS, input).await)
    }
}
