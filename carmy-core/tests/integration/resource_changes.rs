//! Changes a tool reports (`Context::resource_updated`): told once its call succeeded, never
//! for a call that failed; and across replicas through a `ChangeFeed`, each replica's own
//! changes told to its own watchers at once and to the others through the feed, the others'
//! told here without being published again.

use std::sync::{Arc, Mutex};

use carmy_core::{
    AgentError, Carmy, ChangeFeed, ChangeSink, Context, Effect, Invocation, ResourceChange,
    ResourceChanges, Runtime, Tool, ToolSpec, Watching,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Touch {
    id: String,
    fail: bool,
}

/// Reports the order it touches, then fails if asked to.
struct TouchOrder;
impl Tool for TouchOrder {
    type Input = Touch;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("touch_order", Effect::Write);
    async fn run(&self, input: Touch, invocation: Invocation) -> Result<String, AgentError> {
        let ctx: &Context = invocation.context();
        ctx.resource_updated(format!("shop://orders/{}", input.id));
        ctx.resource_updated(format!("shop://orders/{}", input.id));
        if input.fail {
            return Err(AgentError::internal("asked to fail"));
        }
        Ok(input.id)
    }
}

#[derive(Default)]
struct Heard(Mutex<Vec<String>>);
impl ChangeSink for Heard {
    fn updated(&self, uri: &str) {
        self.0.lock().unwrap().push(uri.to_owned());
    }
    fn list_changed(&self) {
        self.0.lock().unwrap().push("list_changed".to_owned());
    }
}

impl Heard {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// A feed between replicas in one process: what one publishes reaches the others' followers.
#[derive(Default)]
struct Bus {
    followers: Mutex<Vec<(usize, ResourceChanges)>>,
    published: Mutex<Vec<(usize, ResourceChange)>>,
}

struct Feed {
    bus: Arc<Bus>,
    replica: usize,
}

impl ChangeFeed for Feed {
    fn publish(&self, change: &ResourceChange) {
        let bus = &self.bus;
        bus.published
            .lock()
            .unwrap()
            .push((self.replica, change.clone()));
        let followers = bus.followers.lock().unwrap().clone();
        for (replica, changes) in followers {
            if replica != self.replica {
                changes.report(change);
            }
        }
    }

    fn follow(&self, changes: ResourceChanges) -> Watching {
        self.bus
            .followers
            .lock()
            .unwrap()
            .push((self.replica, changes));
        Watching::none()
    }
}

fn replica(bus: &Arc<Bus>, replica: usize) -> Runtime {
    Carmy::new()
        .tool(TouchOrder)
        .reports_resource_changes()
        .change_feed(Feed {
            bus: Arc::clone(bus),
            replica,
        })
        .build()
        .unwrap()
}

async fn touch(runtime: &Runtime, id: &str, fail: bool) {
    runtime
        .call("touch_order", json!({ "id": id, "fail": fail }))
        .await;
}

#[tokio::test]
async fn a_change_is_told_once_its_call_succeeded_and_never_for_a_failed_one() {
    let runtime = Carmy::new()
        .tool(TouchOrder)
        .reports_resource_changes()
        .build()
        .unwrap();
    let heard = Arc::new(Heard::default());
    let _watch = runtime.watch_resources(heard.clone()).unwrap();
    touch(&runtime, "ord-1", true).await;
    assert!(heard.take().is_empty(), "a failed call tells nothing");
    touch(&runtime, "ord-1", false).await;
    assert_eq!(
        heard.take(),
        ["shop://orders/ord-1"],
        "once, however often reported"
    );
}

#[tokio::test]
async fn without_the_declaration_nothing_is_told() {
    let runtime = Carmy::new().tool(TouchOrder).build().unwrap();
    let heard = Arc::new(Heard::default());
    let _watch = runtime.watch_resources(heard.clone()).unwrap();
    touch(&runtime, "ord-1", false).await;
    assert!(heard.take().is_empty());
}

#[tokio::test]
async fn replicas_hear_each_others_changes_through_the_feed() {
    let bus = Arc::new(Bus::default());
    let (a, b) = (replica(&bus, 0), replica(&bus, 1));
    let (on_a, on_b) = (Arc::new(Heard::default()), Arc::new(Heard::default()));
    let _a = a.watch_resources(on_a.clone()).unwrap();
    let _b = b.watch_resources(on_b.clone()).unwrap();
    touch(&a, "ord-7", false).await;
    assert_eq!(on_a.take(), ["shop://orders/ord-7"]);
    assert_eq!(on_b.take(), ["shop://orders/ord-7"]);
    // Published once, by the replica that changed it; B told its watchers without publishing.
    assert_eq!(
        *bus.published.lock().unwrap(),
        [(0, ResourceChange::Updated("shop://orders/ord-7".to_owned()))]
    );
    // The application's own handle travels too.
    b.resource_changes().list_changed();
    assert_eq!(on_a.take(), ["list_changed"]);
    assert_eq!(on_b.take(), ["list_changed"]);
}
