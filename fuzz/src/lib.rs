//! Tools shared by the fuzz targets: a small catalog covering every input shape the runtime
//! validates and decodes, and a counter proving what ran.
#![allow(missing_docs)]

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use carmy_core::{AgentError, Carmy, Confirmation, Effect, Invocation, Runtime, Tool, ToolSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Speed {
    Standard,
    Express,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Line {
    #[schemars(length(min = 1, max = 16))]
    pub sku: String,
    #[schemars(range(min = 1, max = 5))]
    pub quantity: u32,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct OrderInput {
    #[schemars(length(min = 1, max = 4))]
    pub lines: Vec<Line>,
    #[serde(default = "standard")]
    pub speed: Speed,
    #[schemars(length(max = 50))]
    pub note: Option<String>,
    pub gift: Option<bool>,
    pub weight_kg: Option<f64>,
}

fn standard() -> Speed {
    Speed::Standard
}

/// A write tool whose input has every shape: nested objects, arrays, enums, ranges, options.
pub struct Place(pub Arc<AtomicU64>);

impl Tool for Place {
    type Input = OrderInput;
    type Output = OrderInput;
    const SPEC: ToolSpec = ToolSpec::new("place", Effect::Write);
    async fn run(&self, input: OrderInput, _: Invocation) -> Result<OrderInput, AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(input)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Target {
    pub id: String,
}

/// Needs confirmation; the fuzzer must never get it to run without a grant.
pub struct Purge(pub Arc<AtomicU64>);

impl Tool for Purge {
    type Input = Target;
    type Output = String;
    const SPEC: ToolSpec =
        ToolSpec::new("purge", Effect::Destructive).confirmation(Confirmation::Required);
    async fn run(&self, input: Target, _: Invocation) -> Result<String, AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(input.id)
    }
}

/// Takes any JSON object and echoes it.
pub struct Echo;

type AnyObject = serde_json::Map<String, serde_json::Value>;

impl Tool for Echo {
    type Input = AnyObject;
    type Output = AnyObject;
    const SPEC: ToolSpec = ToolSpec::new("echo", Effect::None);
    async fn run(&self, input: AnyObject, _: Invocation) -> Result<AnyObject, AgentError> {
        Ok(input)
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct WaitInput {
    /// Milliseconds to wait (at most 255).
    pub ms: u8,
    /// Echoed, so that an answer says which call it answers.
    pub nonce: u32,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Waited {
    pub nonce: u32,
}

/// Waits a little and says which call it was: cancellations race with it.
pub struct Wait;

impl Tool for Wait {
    type Input = WaitInput;
    type Output = Waited;
    const SPEC: ToolSpec = ToolSpec::new("wait", Effect::Read);
    async fn run(&self, input: WaitInput, _: Invocation) -> Result<Waited, AgentError> {
        tokio::time::sleep(std::time::Duration::from_millis(u64::from(input.ms))).await;
        Ok(Waited { nonce: input.nonce })
    }
}

pub struct Fixture {
    pub runtime: Runtime,
    pub placed: Arc<AtomicU64>,
    pub purged: Arc<AtomicU64>,
}

pub fn fixture() -> Fixture {
    let placed = Arc::new(AtomicU64::new(0));
    let purged = Arc::new(AtomicU64::new(0));
    let runtime = Carmy::new()
        .tool(Place(Arc::clone(&placed)))
        .tool(Purge(Arc::clone(&purged)))
        .tool(Echo)
        .tool(Wait)
        .build()
        .expect("the fuzz catalog builds");
    Fixture {
        runtime,
        placed,
        purged,
    }
}

pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
