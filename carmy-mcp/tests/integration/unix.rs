//! Unix domain sockets: several rmcp clients at once, a private socket file, stale sockets,
//! and removal on shutdown.
#![cfg(unix)]

use crate::common;

use std::{os::unix::fs::PermissionsExt, path::PathBuf, time::Duration};

use carmy_core::Context;
use carmy_mcp::{McpServer, UnixSocket};
use common::{LIFECYCLES, PATIENCE, call, connect, text_json};
use serde_json::json;
use tokio::{net::UnixStream, sync::oneshot};

/// A test's directory for its socket, removed when the test ends.
struct SocketDir(PathBuf);

impl SocketDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("carmy-unix-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a test directory");
        Self(dir)
    }

    fn socket(&self) -> PathBuf {
        self.0.join("mcp.sock")
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn several_clients_at_once_over_a_private_socket_removed_on_shutdown() {
    let dir = SocketDir::new("clients");
    let path = dir.socket();
    let testbed = common::tools::testbed(tokio::sync::mpsc::unbounded_channel().0);
    let socket = UnixSocket::bind(&path).expect("bind");
    let mode = std::fs::metadata(&path)
        .expect("the socket file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(socket.serve_with_shutdown(
        McpServer::new(testbed.runtime).context(Context::new().with_principal("local")),
        async {
            let _ = stopped.await;
        },
    ));

    let mut sessions = Vec::new();
    for lifecycle in LIFECYCLES.into_iter().cycle().take(4) {
        let stream = UnixStream::connect(&path).await.expect("connect");
        sessions.push(connect(lifecycle, stream).await.0);
    }
    let calls = sessions
        .iter()
        .enumerate()
        .map(|(index, session)| async move {
            let text = "word ".repeat(index + 1);
            let result = call(session, "word_count", json!({ "text": text })).await;
            assert_eq!(text_json(&result), json!(index + 1));
        });
    futures_join_all(calls).await;

    stop.send(()).expect("the server runs");
    tokio::time::timeout(PATIENCE, server)
        .await
        .expect("stopped in time")
        .expect("the server task")
        .expect("served");
    assert!(!path.exists(), "the socket file is removed");
    for session in sessions {
        let _ = session.cancel().await;
    }
}

async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let handles: Vec<_> = futures.collect();
    for future in handles {
        future.await;
    }
}

#[test]
fn a_stale_socket_is_replaced_and_a_live_one_refused() {
    let dir = SocketDir::new("stale");
    let path = dir.socket();
    // A socket file nobody listens on, as a crashed server leaves it.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
    assert!(path.exists());
    let socket = UnixSocket::bind(&path).expect("the stale socket is replaced");

    let refused = UnixSocket::bind(&path).expect_err("a live socket is refused");
    assert_eq!(refused.kind(), std::io::ErrorKind::AddrInUse, "{refused}");
    drop(socket);
    assert!(!path.exists());

    std::fs::write(&path, "not a socket").expect("a regular file");
    let refused = UnixSocket::bind(&path).expect_err("a regular file is left alone");
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::AlreadyExists,
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("intact"),
        "not a socket"
    );
}

#[tokio::test]
async fn shutdown_cancels_calls_past_the_grace_period() {
    let dir = SocketDir::new("grace");
    let path = dir.socket();
    let (probe_tx, mut probe) = tokio::sync::mpsc::unbounded_channel();
    let testbed = common::tools::testbed(probe_tx);
    let runtime = testbed.runtime.clone();
    let socket = UnixSocket::bind(&path)
        .expect("bind")
        .grace_period(Duration::from_millis(200));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(
        socket.serve_with_shutdown(McpServer::new(testbed.runtime), async {
            let _ = stopped.await;
        }),
    );
    let stream = UnixStream::connect(&path).await.expect("connect");
    let (session, _) = connect(common::Lifecycle::Initialize, stream).await;
    let _call = session
        .peer()
        .send_request_with_option(
            common::call_request("slow", json!({ "steps": 10_000, "step_ms": 10 })),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    let common::tools::ProbeEvent::Started(execution) = common::next_probe(&mut probe).await else {
        panic!("expected the slow tool to start");
    };
    stop.send(()).expect("the server runs");
    tokio::time::timeout(PATIENCE, server)
        .await
        .expect("stopped in time")
        .expect("the server task")
        .expect("served");
    assert_eq!(
        runtime.execution(&execution).expect("recorded").status,
        carmy_core::ExecutionStatus::Cancelled
    );
    assert!(!path.exists());
}
