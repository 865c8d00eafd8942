//! A served directory over MCP, with real files in a temporary directory and rmcp's client in
//! both lifecycles: its files listed and read, traversal refused as "not found" with nothing
//! read, edits told to subscribers (`resources/subscribe` on 2025-11-25, `subscriptions/listen`
//! on 2026-07-28) and nobody else, files appearing told as list changes, subscriptions bounded
//! per session and gone with it.
#![cfg(unix)]
#![allow(deprecated)] // `resources/subscribe` and `unsubscribe`: legacy in rmcp, served here.

use crate::common;

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use base64::Engine as _;
use carmy_core::{Access, Carmy, Context, Directory, Runtime};
use carmy_mcp::McpServer;
use common::{LIFECYCLES, Lifecycle, PATIENCE};
use rmcp::{
    ClientHandler, RoleClient, ServiceError,
    model::{
        ErrorCode, ErrorData, PaginatedRequestParams, ReadResourceRequestParams, ResourceContents,
        ResourceUpdatedNotificationParam, ServerNotification, SubscribeRequestParams,
        SubscriptionFilter, UnsubscribeRequestParams,
    },
    service::{NotificationContext, RunningService},
};
use tokio::{sync::mpsc, task::JoinHandle, time::timeout};

const SECRET: &str = "TOP SECRET: the recipe";

/// A fresh directory under the system's temporary one, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "carmy-mcp-files-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `base/secret.txt` beside `base/root/`; in the root a text file, an image, a file in a
/// subdirectory, and a symbolic link to the secret.
fn tree() -> (Temp, PathBuf) {
    let base = Temp::new();
    let root = base.0.join("root");
    std::fs::create_dir_all(root.join("policies")).unwrap();
    std::fs::write(base.0.join("secret.txt"), SECRET).unwrap();
    std::fs::write(root.join("returns.md"), "# Returns\nWithin 30 days.").unwrap();
    std::fs::write(root.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1]).unwrap();
    std::fs::write(root.join("policies/shipping.txt"), "Free over 50.").unwrap();
    std::os::unix::fs::symlink(base.0.join("secret.txt"), root.join("leak.txt")).unwrap();
    (base, root)
}

fn serve(root: &Path) -> (Runtime, Directory) {
    let directory = Directory::new(root)
        .unwrap()
        .name("docs")
        .debounce(Duration::from_millis(50));
    let runtime = Carmy::new()
        .resource_provider(directory.clone())
        .build()
        .unwrap();
    (runtime, directory)
}

/// What the client hears outside any `subscriptions/listen` stream.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    Updated(String),
    ListChanged,
}

#[derive(Clone)]
struct Listener(mpsc::UnboundedSender<Heard>);

impl ClientHandler for Listener {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Heard::Updated(params.uri));
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(Heard::ListChanged);
    }
}

struct Session {
    client: RunningService<RoleClient, Listener>,
    heard: mpsc::UnboundedReceiver<Heard>,
    server: JoinHandle<Result<(), carmy_mcp::ServeError>>,
}

async fn session(lifecycle: Lifecycle, runtime: &Runtime) -> Session {
    session_as(lifecycle, runtime, Context::new()).await
}

/// A session whose caller is held to `context` (its access rules).
async fn session_as(lifecycle: Lifecycle, runtime: &Runtime, context: Context) -> Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let server = tokio::spawn(
        McpServer::new(runtime.clone())
            .context(context)
            .serve_io(read, write),
    );
    let (sender, heard) = mpsc::unbounded_channel();
    let client = common::connect_as(Listener(sender), lifecycle, client_io).await;
    Session {
        client,
        heard,
        server,
    }
}

/// Waits until `condition` holds, or fails the test after [`PATIENCE`].
async fn until(what: &str, condition: impl Fn() -> bool) {
    let waited = timeout(PATIENCE, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "waited in vain for {what}");
}

/// The next thing heard that `wanted` accepts (others are skipped), or a failure after
/// [`PATIENCE`].
async fn hear(heard: &mut mpsc::UnboundedReceiver<Heard>, wanted: &Heard) {
    let found = timeout(PATIENCE, async {
        while let Some(next) = heard.recv().await {
            if &next == wanted {
                return;
            }
        }
        panic!("the session ended before {wanted:?}");
    })
    .await;
    assert!(found.is_ok(), "never heard {wanted:?}");
}

/// Whatever is heard within `quiet` (debounced changes arrive well before).
async fn heard_within(heard: &mut mpsc::UnboundedReceiver<Heard>, quiet: Duration) -> Vec<Heard> {
    tokio::time::sleep(quiet).await;
    let mut all = Vec::new();
    while let Ok(next) = heard.try_recv() {
        all.push(next);
    }
    all
}

fn mcp_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

/// The not-found error of each version: `-32002` up to 2025-11-25, `-32602` from 2026-07-28.
fn not_found(lifecycle: Lifecycle) -> ErrorCode {
    match lifecycle {
        Lifecycle::Initialize => ErrorCode::RESOURCE_NOT_FOUND,
        Lifecycle::Discover => ErrorCode::INVALID_PARAMS,
    }
}

/// URIs that try to reach `base/secret.txt` (or anything) outside the root.
fn crafted(root: &str) -> Vec<String> {
    let base = root.rsplit_once('/').unwrap().0;
    vec![
        format!("file://{root}/../secret.txt"),
        format!("file://{root}/policies/../../secret.txt"),
        format!("file://{root}/%2e%2e/secret.txt"),
        format!("file://{root}/%2E%2E%2Fsecret.txt"),
        format!("file://{root}/..%5csecret.txt"),
        format!("file://{root}/leak.txt"),
        format!("file://{base}/secret.txt"),
        format!("file://evil.example{root}/../secret.txt"),
        format!("file://{root}/returns.md%00/../../secret.txt"),
        format!("file://{root}/../../../../etc/passwd"),
        "file:///etc/passwd".to_owned(),
    ]
}

#[tokio::test]
async fn files_are_listed_and_read_in_both_lifecycles() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    for lifecycle in LIFECYCLES {
        let Session { client, .. } = session(lifecycle, &runtime).await;
        let resources = client
            .peer_info()
            .and_then(|info| info.capabilities.resources.clone())
            .expect("the resources capability");
        assert_eq!(resources.subscribe, Some(true), "{lifecycle:?}");
        assert_eq!(resources.list_changed, Some(true), "{lifecycle:?}");

        let listed = client.list_resources(None).await.expect("list");
        let names: Vec<_> = listed.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["logo.png", "policies/shipping.txt", "returns.md"],
            "{lifecycle:?}: in order, without the link"
        );
        let returns = &listed.resources[2];
        assert_eq!(returns.uri, directory.uri_of("returns.md").unwrap());
        assert!(returns.uri.starts_with("file:///"));
        assert_eq!(returns.mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(returns.size, Some(25));

        let text = client
            .read_resource(ReadResourceRequestParams::new(&returns.uri))
            .await
            .expect("read");
        match &text.contents[..] {
            [ResourceContents::TextResourceContents { text, uri, .. }] => {
                assert_eq!(text, "# Returns\nWithin 30 days.");
                assert_eq!(uri, &returns.uri);
            }
            other => panic!("{lifecycle:?}: {other:?}"),
        }
        let logo = client
            .read_resource(ReadResourceRequestParams::new(
                directory.uri_of("logo.png").unwrap(),
            ))
            .await
            .expect("read");
        match &logo.contents[..] {
            [ResourceContents::BlobResourceContents { blob, .. }] => assert_eq!(
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .unwrap(),
                [0x89, b'P', b'N', b'G', 0, 1]
            ),
            other => panic!("{lifecycle:?}: {other:?}"),
        }
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn traversal_is_refused_as_not_found_and_nothing_is_read() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let root = directory.root().to_str().unwrap().to_owned();
    for lifecycle in LIFECYCLES {
        let Session { client, .. } = session(lifecycle, &runtime).await;
        for uri in crafted(&root) {
            let error = mcp_error(
                client
                    .read_resource(ReadResourceRequestParams::new(&uri))
                    .await
                    .expect_err(&uri),
            );
            assert_eq!(
                error.code,
                not_found(lifecycle),
                "{lifecycle:?} read {uri:?}"
            );
            let said = serde_json::to_string(&error).unwrap();
            assert!(
                !said.contains("TOP SECRET"),
                "{lifecycle:?} {uri:?}: {said}"
            );
            assert!(!said.contains("root:"), "{lifecycle:?} {uri:?}: {said}");
            if lifecycle == Lifecycle::Initialize {
                let error = mcp_error(
                    client
                        .subscribe(SubscribeRequestParams::new(&uri))
                        .await
                        .expect_err(&uri),
                );
                assert_eq!(error.code, not_found(lifecycle), "subscribe {uri:?}");
            }
        }
        // Nothing of the secret in any answer (carmy-core's tests show the file is never
        // opened), and the server goes on serving.
        let fine = client
            .read_resource(ReadResourceRequestParams::new(
                directory.uri_of("returns.md").unwrap(),
            ))
            .await;
        assert!(fine.is_ok(), "{lifecycle:?}: {fine:?}");
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_subscriber_hears_of_edits_until_it_unsubscribes() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let returns = directory.uri_of("returns.md").unwrap();
    let shipping = directory.uri_of("policies/shipping.txt").unwrap();
    let Session {
        client, mut heard, ..
    } = session(Lifecycle::Initialize, &runtime).await;
    client
        .subscribe(SubscribeRequestParams::new(&returns))
        .await
        .expect("subscribe");

    std::fs::write(root.join("returns.md"), "# Returns\nWithin 60 days.").unwrap();
    hear(&mut heard, &Heard::Updated(returns.clone())).await;

    // A file nobody subscribed to changes: nothing is told of it.
    std::fs::write(root.join("policies/shipping.txt"), "Free over 40.").unwrap();
    let told = heard_within(&mut heard, Duration::from_millis(600)).await;
    assert!(
        !told.contains(&Heard::Updated(shipping.clone())),
        "{told:?}"
    );

    client
        .unsubscribe(UnsubscribeRequestParams::new(&returns))
        .await
        .expect("unsubscribe");
    std::fs::write(root.join("returns.md"), "# Returns\nWithin 90 days.").unwrap();
    let told = heard_within(&mut heard, Duration::from_millis(600)).await;
    assert!(!told.contains(&Heard::Updated(returns.clone())), "{told:?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_file_appearing_or_disappearing_is_a_list_change() {
    let (_base, root) = tree();
    let (runtime, _directory) = serve(&root);
    let Session {
        client, mut heard, ..
    } = session(Lifecycle::Initialize, &runtime).await;
    // Once initialized, the session is told of list changes: wait until it watches.
    until("the session to watch", || runtime.resource_watches() == 1).await;

    std::fs::write(root.join("faq.md"), "# FAQ").unwrap();
    hear(&mut heard, &Heard::ListChanged).await;
    let listed = client.list_resources(None).await.expect("list");
    assert!(listed.resources.iter().any(|r| r.name == "faq.md"));

    heard_within(&mut heard, Duration::from_millis(300)).await;
    std::fs::remove_file(root.join("faq.md")).unwrap();
    hear(&mut heard, &Heard::ListChanged).await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn on_2026_07_28_a_listen_stream_hears_what_it_asked_for() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let returns = directory.uri_of("returns.md").unwrap();
    let shipping = directory.uri_of("policies/shipping.txt").unwrap();
    let escape = format!("file://{}/../secret.txt", directory.root().display());
    let Session { client, .. } = session(Lifecycle::Discover, &runtime).await;

    // The older methods are gone on this version.
    let error = mcp_error(
        client
            .subscribe(SubscribeRequestParams::new(&returns))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);

    let filter = SubscriptionFilter::builder()
        .resources_list_changed()
        .resource_subscriptions([returns.clone(), escape.clone(), "shop://nothing".into()])
        .build();
    let mut stream = client.peer().listen(filter).await.expect("listen");
    let acknowledged = stream.acknowledged().clone();
    assert_eq!(acknowledged.resources_list_changed, Some(true));
    let followed = acknowledged.resource_subscriptions.unwrap_or_default();
    assert!(followed.contains(&returns), "{followed:?}");
    assert!(
        !followed.contains(&"shop://nothing".to_owned()),
        "{followed:?}"
    );
    until("the stream to watch", || runtime.resource_watches() == 1).await;

    std::fs::write(root.join("policies/shipping.txt"), "Free over 40.").unwrap();
    std::fs::write(root.join("secret-ish.txt"), "new").unwrap();
    std::fs::write(root.join("returns.md"), "# Returns\nWithin 60 days.").unwrap();
    let mut updated = Vec::new();
    let mut list_changed = false;
    while !(list_changed && updated.contains(&returns)) {
        let notification = timeout(PATIENCE, stream.next())
            .await
            .expect("a notification in time")
            .expect("the stream");
        match notification {
            Some(ServerNotification::ResourceUpdatedNotification(n)) => {
                updated.push(n.params.uri);
            }
            Some(ServerNotification::ResourceListChangedNotification(_)) => list_changed = true,
            other => panic!("{other:?}"),
        }
    }
    assert!(!updated.contains(&shipping), "not asked for: {updated:?}");
    assert!(!updated.contains(&escape), "{updated:?}");

    stream.cancel().await.expect("cancel");
    until("the stream to stop watching", || {
        runtime.resource_watches() == 0
    })
    .await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn on_2026_07_28_an_edit_right_after_the_acknowledgment_is_told() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let returns = directory.uri_of("returns.md").unwrap();
    let Session { client, .. } = session(Lifecycle::Discover, &runtime).await;
    let filter = SubscriptionFilter::builder()
        .resource_subscriptions([returns.clone()])
        .build();
    let mut stream = client.peer().listen(filter).await.expect("listen");
    // No waiting for the server: the acknowledgment is the client's cue that it is followed.
    std::fs::write(root.join("returns.md"), "# Returns\nWithin 90 days.").unwrap();
    let notification = timeout(PATIENCE, stream.next())
        .await
        .expect("a notification in time")
        .expect("the stream");
    match notification {
        Some(ServerNotification::ResourceUpdatedNotification(n)) => {
            assert_eq!(n.params.uri, returns);
        }
        other => panic!("{other:?}"),
    }
    stream.cancel().await.expect("cancel");
    until("the stream to stop watching", || {
        runtime.resource_watches() == 0
    })
    .await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn subscriptions_are_bounded_per_session() {
    let (_base, root) = tree();
    for n in 0..101 {
        std::fs::write(root.join(format!("note-{n:03}.txt")), "note").unwrap();
    }
    let (runtime, directory) = serve(&root);
    let note = |n: usize| directory.uri_of(&format!("note-{n:03}.txt")).unwrap();
    let Session { client, .. } = session(Lifecycle::Initialize, &runtime).await;
    for n in 0..100 {
        client
            .subscribe(SubscribeRequestParams::new(note(n)))
            .await
            .unwrap_or_else(|error| panic!("subscription {n}: {error:?}"));
    }
    // Again to one it holds: nothing more is taken.
    client
        .subscribe(SubscribeRequestParams::new(note(0)))
        .await
        .expect("resubscribe");
    let error = mcp_error(
        client
            .subscribe(SubscribeRequestParams::new(note(100)))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("at most 100"), "{}", error.message);
    let data = error.data.expect("data");
    assert_eq!(data["error"]["code"], "TOO_MANY_SUBSCRIPTIONS");
    assert_eq!(data["error"]["max"], 100);

    // One given back makes room; another session has its own.
    client
        .unsubscribe(UnsubscribeRequestParams::new(note(0)))
        .await
        .expect("unsubscribe");
    client
        .subscribe(SubscribeRequestParams::new(note(100)))
        .await
        .expect("room again");
    let other = session(Lifecycle::Initialize, &runtime).await;
    other
        .client
        .subscribe(SubscribeRequestParams::new(note(0)))
        .await
        .expect("its own room");
    other.client.cancel().await.expect("close");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_closed_session_leaves_nothing_behind() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let returns = directory.uri_of("returns.md").unwrap();
    let Session { client, server, .. } = session(Lifecycle::Initialize, &runtime).await;
    client
        .subscribe(SubscribeRequestParams::new(&returns))
        .await
        .expect("subscribe");
    assert_eq!(runtime.resource_watches(), 1);
    client.cancel().await.expect("close");
    timeout(PATIENCE, server)
        .await
        .expect("the server ends with the session")
        .expect("no panic")
        .expect("served");
    until("the watch to end", || runtime.resource_watches() == 0).await;

    // A new session starts from nothing.
    let Session {
        client, mut heard, ..
    } = session(Lifecycle::Initialize, &runtime).await;
    until("the session to watch", || runtime.resource_watches() == 1).await;
    std::fs::write(root.join("returns.md"), "edited").unwrap();
    let told = heard_within(&mut heard, Duration::from_millis(600)).await;
    assert!(!told.contains(&Heard::Updated(returns)), "{told:?}");
    client.cancel().await.expect("close");
}

/// In the root, beside the rest: `public/guide.md`, `private/plans.md`, and a link
/// `public/plans.md` to the latter.
fn ruled(root: &Path) {
    std::fs::create_dir_all(root.join("public")).unwrap();
    std::fs::create_dir_all(root.join("private")).unwrap();
    std::fs::write(root.join("public/guide.md"), "# Guide").unwrap();
    std::fs::write(root.join("private/plans.md"), SECRET).unwrap();
    std::os::unix::fs::symlink("../private/plans.md", root.join("public/plans.md")).unwrap();
}

#[tokio::test]
async fn a_caller_subscribes_only_to_what_it_may_read() {
    let (_base, root) = tree();
    ruled(&root);
    let (runtime, directory) = serve(&root);
    let public = format!("resource:file://{}/public/*", directory.root().display());
    let access: Access = public.parse().unwrap();
    let Session { client, .. } = session_as(
        Lifecycle::Initialize,
        &runtime,
        Context::new().with_access(access),
    )
    .await;
    let guide = directory.uri_of("public/guide.md").unwrap();
    client
        .subscribe(SubscribeRequestParams::new(&guide))
        .await
        .expect("a file it may read");
    // Refused as a read is: the file's existence and changes are none of this caller's business,
    // whether it is named or reached through a link.
    for relative in ["private/plans.md", "public/plans.md", "private/missing.md"] {
        let uri = format!("file://{}/{relative}", directory.root().display());
        let read = mcp_error(
            client
                .read_resource(ReadResourceRequestParams::new(&uri))
                .await
                .expect_err(&uri),
        );
        let subscribed = mcp_error(
            client
                .subscribe(SubscribeRequestParams::new(&uri))
                .await
                .expect_err(&uri),
        );
        assert_eq!(subscribed, read, "{relative}");
        assert_eq!(read.code, ErrorCode::INVALID_PARAMS, "{relative}");
        assert_eq!(
            read.data.as_ref().unwrap()["error"]["code"],
            "RESOURCE_NOT_ALLOWED",
            "{relative}"
        );
        assert!(!read.message.contains("TOP SECRET"), "{relative}");
    }
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_long_listing_is_paged_in_order_each_file_once() {
    let (_base, root) = tree();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    for n in 0..250 {
        std::fs::write(root.join(format!("notes/{n:03}.txt")), "note").unwrap();
    }
    let (runtime, _directory) = serve(&root);
    let mut expected: Vec<String> = (0..250).map(|n| format!("notes/{n:03}.txt")).collect();
    expected.extend(["logo.png", "policies/shipping.txt", "returns.md"].map(String::from));
    expected.sort();
    for lifecycle in LIFECYCLES {
        let Session { client, .. } = session(lifecycle, &runtime).await;
        let (mut names, mut cursor) = (Vec::new(), None);
        loop {
            let request =
                cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
            let page = client.list_resources(request).await.expect("a page");
            names.extend(page.resources.into_iter().map(|resource| resource.name));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(names, expected, "{lifecycle:?}");
        client.cancel().await.expect("close");
    }
}
