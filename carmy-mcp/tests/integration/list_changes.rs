//! A catalog that changes while it is served: every session is told
//! `notifications/tools/list_changed` (unsolicited on the older lifecycle, on its
//! `subscriptions/listen` stream on 2026-07-28), `tools/list` leaves the disabled tool out, and a
//! call of it is refused as a call of an unknown tool (`-32602`) until it is enabled again.

use crate::common::{self, LIFECYCLES, Lifecycle, PATIENCE};

use carmy_core::{Context, Disabled, Runtime};
use carmy_mcp::McpServer;
use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{CallToolRequestParams, ErrorCode, ServerNotification, SubscriptionFilter},
    service::{NotificationContext, RunningService, ServiceError},
};
use serde_json::json;
use tokio::{sync::mpsc, time::timeout};

/// Hears `notifications/tools/list_changed` outside any stream.
#[derive(Clone)]
struct Listener(mpsc::UnboundedSender<()>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

type Client = RunningService<RoleClient, Listener>;

async fn session(lifecycle: Lifecycle, runtime: &Runtime) -> (Client, mpsc::UnboundedReceiver<()>) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(runtime.clone()).serve_io(read, write));
    let (sender, heard) = mpsc::unbounded_channel();
    let client = common::connect_as(Listener(sender), lifecycle, client_io).await;
    (client, heard)
}

fn runtime() -> Runtime {
    let (probe, _) = mpsc::unbounded_channel();
    common::tools::testbed(probe).runtime
}

async fn listed(client: &Client) -> Vec<String> {
    let tools = client.list_tools(None).await.expect("tools/list").tools;
    tools
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect()
}

async fn shout(client: &Client) -> Result<(), ServiceError> {
    let params = CallToolRequestParams::new("shout").with_arguments(
        json!({ "text": "hi" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    client.call_tool(params).await.map(drop)
}

fn disable(runtime: &Runtime, rules: &[&str]) {
    let changed = runtime.catalog().disable(Disabled::parse(rules).unwrap());
    assert!(changed.tools);
}

#[tokio::test]
async fn every_list_may_change_and_the_server_says_so() {
    let runtime = runtime();
    for lifecycle in LIFECYCLES {
        let (client, _) = session(lifecycle, &runtime).await;
        let capabilities = client
            .peer_info()
            .expect("server info")
            .capabilities
            .clone();
        let tools = capabilities.tools.expect("tools");
        assert_eq!(tools.list_changed, Some(true), "{lifecycle:?}");
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn before_2026_07_28_a_disabled_tool_is_told_unlisted_and_unknown() {
    let runtime = runtime();
    let (client, mut heard) = session(Lifecycle::Initialize, &runtime).await;
    assert!(listed(&client).await.contains(&"shout".to_owned()));
    shout(&client).await.expect("shout runs");

    disable(&runtime, &["shout"]);
    timeout(PATIENCE, heard.recv())
        .await
        .expect("list_changed in time")
        .expect("heard");
    let tools = listed(&client).await;
    assert!(!tools.contains(&"shout".to_owned()), "{tools:?}");
    assert!(tools.contains(&"lookup".to_owned()), "{tools:?}");
    match shout(&client).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(error.data.unwrap()["error"]["code"], "TOOL_NOT_FOUND");
        }
        other => panic!("a disabled tool answered {other:?}"),
    }

    runtime.catalog().disable(Disabled::none());
    timeout(PATIENCE, heard.recv())
        .await
        .expect("list_changed in time")
        .expect("heard");
    assert!(listed(&client).await.contains(&"shout".to_owned()));
    shout(&client).await.expect("shout runs again");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_caller_held_to_some_tools_no_longer_lists_a_disabled_one() {
    let runtime = runtime();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let held = Context::new().with_access("shout, lookup".parse().unwrap());
    tokio::spawn(
        McpServer::new(runtime.clone())
            .context(held)
            .serve_io(read, write),
    );
    let (sender, mut heard) = mpsc::unbounded_channel();
    let client = Listener(sender).serve(client_io).await.expect("initialize");
    assert_eq!(listed(&client).await, ["lookup", "shout"]);
    disable(&runtime, &["effect:none"]);
    // rmcp's client keeps the list it was given until it hears that it changed.
    timeout(PATIENCE, heard.recv())
        .await
        .expect("list_changed in time")
        .expect("heard");
    assert_eq!(listed(&client).await, ["lookup"]);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn on_2026_07_28_a_listen_stream_hears_the_tools_list_change() {
    let runtime = runtime();
    let (client, mut unsolicited) = session(Lifecycle::Discover, &runtime).await;
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut stream = client.peer().listen(filter).await.expect("listen");
    assert_eq!(stream.acknowledged().tools_list_changed, Some(true));

    disable(&runtime, &["shout"]);
    let notification = timeout(PATIENCE, stream.next())
        .await
        .expect("a notification in time")
        .expect("the stream");
    assert!(
        matches!(
            notification,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{notification:?}"
    );
    assert!(!listed(&client).await.contains(&"shout".to_owned()));
    // Told on the stream the client opened, not unsolicited.
    assert!(unsolicited.try_recv().is_err());

    stream.cancel().await.expect("cancel");
    client.cancel().await.expect("close");
}
