//! Hand-written tools covering every mapping: shared by the testbed binary and the in-process
//! integration tests (`#[path]`-included, so each test uses only some of it).
#![allow(dead_code, unreachable_pub)]

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Carmy, Context, Effect, ExecutionId, Invocation, Runtime, Tool, ToolSpec,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// What the slow tool tells a test about its executions.
#[derive(Debug)]
pub enum ProbeEvent {
    /// An execution of `slow` started.
    Started(ExecutionId),
    /// An execution of `slow` ended, or its future was dropped; `cancelled` is what the tool saw.
    Stopped { id: ExecutionId, cancelled: bool },
}

/// The testbed's tools, with their run counter and probe.
pub struct Testbed {
    pub runtime: Runtime,
    /// How many times `place_order` actually ran.
    pub order_runs: Arc<AtomicU64>,
}

pub fn testbed(probe: mpsc::UnboundedSender<ProbeEvent>) -> Testbed {
    testbed_with(probe, |carmy| carmy)
}

/// The testbed's tools and those `more` adds.
pub fn testbed_with(
    probe: mpsc::UnboundedSender<ProbeEvent>,
    more: impl FnOnce(Carmy) -> Carmy,
) -> Testbed {
    let order_runs = Arc::new(AtomicU64::new(0));
    let carmy = Carmy::new()
        .tool(Lookup)
        .tool(PlaceOrder {
            runs: Arc::clone(&order_runs),
        })
        .tool(DeleteOrder)
        .tool(SendEmail)
        .tool(WordCount)
        .tool(Shout)
        .tool(Slow { probe });
    let runtime = more(carmy).build().expect("the testbed catalog builds");
    Testbed {
        runtime,
        order_runs,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LookupInput {
    /// The product's SKU.
    pub sku: String,
    /// At most this many warehouses in the answer.
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Product {
    pub sku: String,
    pub name: String,
    pub stock: u32,
}

/// read, object output.
pub struct Lookup;

impl Tool for Lookup {
    type Input = LookupInput;
    type Output = Product;
    const SPEC: ToolSpec = ToolSpec::new("lookup", Effect::Read)
        .title("Look up a product")
        .description("Finds a product by SKU.");

    async fn run(&self, input: LookupInput, _: Invocation) -> Result<Product, AgentError> {
        match input.sku.as_str() {
            "MOUSE-1" => Ok(Product {
                sku: input.sku,
                name: "Mouse".into(),
                stock: 12,
            }),
            _ => Err(AgentError::not_found(
                "PRODUCT_NOT_FOUND",
                format!("no product `{}`", input.sku),
            )
            .with_next_tool("lookup")),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderInput {
    pub sku: String,
    #[schemars(range(min = 1))]
    pub quantity: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Order {
    pub order_id: String,
    /// How many times this tool has run in this process.
    pub runs: u64,
}

/// write, not idempotent, counts its runs.
pub struct PlaceOrder {
    pub runs: Arc<AtomicU64>,
}

impl Tool for PlaceOrder {
    type Input = OrderInput;
    type Output = Order;
    const SPEC: ToolSpec =
        ToolSpec::new("place_order", Effect::Write).description("Places an order.");

    async fn run(&self, input: OrderInput, _: Invocation) -> Result<Order, AgentError> {
        let runs = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Order {
            order_id: format!("order-{runs}-{}x{}", input.quantity, input.sku),
            runs,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteInput {
    pub order_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    pub deleted: bool,
}

/// destructive (so confirmation is required by default), idempotent.
pub struct DeleteOrder;

impl Tool for DeleteOrder {
    type Input = DeleteInput;
    type Output = Deleted;
    const SPEC: ToolSpec = ToolSpec::new("delete_order", Effect::Destructive)
        .idempotent(true)
        .description("Deletes an order for good.");

    async fn run(&self, _: DeleteInput, _: Invocation) -> Result<Deleted, AgentError> {
        Ok(Deleted { deleted: true })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EmailInput {
    pub to: String,
    pub body: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Sent {
    pub queued: bool,
}

/// external_write.
pub struct SendEmail;

impl Tool for SendEmail {
    type Input = EmailInput;
    type Output = Sent;
    const SPEC: ToolSpec =
        ToolSpec::new("send_email", Effect::ExternalWrite).description("Sends an email.");

    async fn run(&self, _: EmailInput, _: Invocation) -> Result<Sent, AgentError> {
        Ok(Sent { queued: true })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextInput {
    pub text: String,
}

/// none, non-object output.
pub struct WordCount;

impl Tool for WordCount {
    type Input = TextInput;
    type Output = u64;
    const SPEC: ToolSpec =
        ToolSpec::new("word_count", Effect::None).description("Counts the words of a text.");

    async fn run(&self, input: TextInput, _: Invocation) -> Result<u64, AgentError> {
        Ok(input.text.split_whitespace().count() as u64)
    }
}

/// none, a string output.
pub struct Shout;

impl Tool for Shout {
    type Input = TextInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("shout", Effect::None).description("Upper-cases text.");

    async fn run(&self, input: TextInput, _: Invocation) -> Result<String, AgentError> {
        Ok(input.text.to_uppercase())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlowInput {
    /// Steps to take; the tool reports progress after each.
    pub steps: u32,
    /// Milliseconds per step.
    pub step_ms: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SlowDone {
    pub steps: u32,
}

/// read, slow, reports progress, and tells its probe when it starts and stops.
pub struct Slow {
    pub probe: mpsc::UnboundedSender<ProbeEvent>,
}

/// Sends `Stopped` when the tool's future ends, by returning or by being dropped.
struct StopGuard {
    probe: mpsc::UnboundedSender<ProbeEvent>,
    context: Context,
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        let id = self
            .context
            .execution_id()
            .cloned()
            .unwrap_or_else(|| ExecutionId::from("none"));
        let _ = self.probe.send(ProbeEvent::Stopped {
            id,
            cancelled: self.context.is_cancelled(),
        });
    }
}

impl Tool for Slow {
    type Input = SlowInput;
    type Output = SlowDone;
    const SPEC: ToolSpec = ToolSpec::new("slow", Effect::Read)
        .timeout(Duration::from_secs(30))
        .description("Takes its time, reporting progress.");

    async fn run(&self, input: SlowInput, invocation: Invocation) -> Result<SlowDone, AgentError> {
        let context = invocation.context_owned();
        if let Some(id) = context.execution_id() {
            let _ = self.probe.send(ProbeEvent::Started(id.clone()));
        }
        let _guard = StopGuard {
            probe: self.probe.clone(),
            context: context.clone(),
        };
        let total = f64::from(input.steps);
        // No `select!` on `context.cancelled()`: the runtime drops this future when the call is
        // cancelled, and the guard sees the cancelled context as it goes.
        for step in 1..=input.steps {
            tokio::time::sleep(Duration::from_millis(input.step_ms)).await;
            context.progress(f64::from(step), Some(total), Some("working"));
        }
        Ok(SlowDone { steps: input.steps })
    }
}
