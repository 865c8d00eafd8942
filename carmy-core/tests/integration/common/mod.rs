//! Tools shared by the tests of the pipeline's seams (approval, admission, stores): each counts
//! its runs and waits as long as its input says.
#![allow(dead_code, unreachable_pub)]

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{AgentError, Carmy, Effect, Invocation, Tool, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Input {
    /// The order the call is about.
    pub order_id: String,
    /// Why; optional.
    pub reason: Option<String>,
    /// How long the tool takes.
    #[serde(default)]
    pub millis: u64,
}

/// Counts its runs (and how many run at once); its spec is chosen by `E`.
pub struct Counted<const E: u8>(pub Arc<Runs>);

#[derive(Debug, Default)]
pub struct Runs {
    started: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
}

impl Runs {
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }
    pub fn max_running(&self) -> usize {
        self.max_running.load(Ordering::SeqCst)
    }
}

const fn spec(effect: u8) -> ToolSpec {
    match effect {
        0 => ToolSpec::new("cancel_order", Effect::Destructive),
        1 => ToolSpec::new("place_order", Effect::Write).timeout(Duration::from_millis(500)),
        _ => ToolSpec::new("get_order", Effect::Read).timeout(Duration::from_millis(500)),
    }
}

impl<const E: u8> Tool for Counted<E> {
    type Input = Input;
    type Output = String;
    const SPEC: ToolSpec = spec(E);

    async fn run(&self, input: Input, _: Invocation) -> Result<String, AgentError> {
        self.0.started.fetch_add(1, Ordering::SeqCst);
        let now = self.0.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.max_running.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(input.millis)).await;
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        Ok(input.order_id)
    }
}

/// The three tools, with their run counters: `cancel_order` (destructive, needs confirmation),
/// `place_order` (a write, 500 ms timeout), `get_order` (a read, 500 ms timeout).
pub struct Shop {
    pub cancels: Arc<Runs>,
    pub places: Arc<Runs>,
    pub gets: Arc<Runs>,
}

impl Shop {
    pub fn new() -> Self {
        Self {
            cancels: Arc::default(),
            places: Arc::default(),
            gets: Arc::default(),
        }
    }

    /// A builder with the three tools registered.
    pub fn carmy(&self) -> Carmy {
        Carmy::new()
            .tool(Counted::<0>(Arc::clone(&self.cancels)))
            .tool(Counted::<1>(Arc::clone(&self.places)))
            .tool(Counted::<2>(Arc::clone(&self.gets)))
    }
}

/// Polls `condition` every millisecond for up to 2 s.
pub async fn wait_until(condition: impl Fn() -> bool) {
    for _ in 0..2_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("condition not reached within 2 s");
}
