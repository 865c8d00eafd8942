//! Resource changes across replicas through the shared stores' feeds (PostgreSQL's `NOTIFY`,
//! Redis's pub/sub), against real servers: a change reported on one replica reaches the
//! watchers of another, once; a replica's own watchers hear it once, not again from the feed;
//! nobody else's (another schema, another prefix) hears it; and a replica whose feed lost its
//! server hears changes again once the server is back.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use carmy_core::{Carmy, ChangeFeed, ChangeSink, ResourceWatch, Runtime};
use carmy_store::{PostgresStore, PostgresStoreOptions, RedisStore, RedisStoreOptions};
use test_servers::{Postgres, Redis};
use tokio::time::{Instant, sleep};

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
    /// What it heard once `want` things, or after a few seconds.
    async fn after(&self, want: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.0.lock().unwrap().len() < want && Instant::now() < deadline {
            sleep(Duration::from_millis(10)).await;
        }
        // Anything more would come soon after.
        sleep(Duration::from_millis(200)).await;
        self.0.lock().unwrap().clone()
    }
}

/// A runtime on `feed`, and a watcher of its changes.
fn replica(feed: impl ChangeFeed) -> (Runtime, Arc<Heard>, ResourceWatch) {
    let runtime = Carmy::new()
        .reports_resource_changes()
        .change_feed(feed)
        .build()
        .unwrap();
    let heard = Arc::new(Heard::default());
    let watch = runtime.watch_resources(heard.clone()).unwrap();
    (runtime, heard, watch)
}

/// Two replicas on one feed and an outsider on another: what each hears.
async fn told_across(a: impl ChangeFeed, b: impl ChangeFeed, outsider: impl ChangeFeed) {
    let (a, on_a, _a) = replica(a);
    let (_b, on_b, _b_watch) = replica(b);
    let (_c, on_c, _c_watch) = replica(outsider);
    // The listening connections come up in the background.
    sleep(Duration::from_millis(300)).await;
    a.resource_changes().updated("shop://orders/ord-1001");
    a.resource_changes().list_changed();
    let want = ["shop://orders/ord-1001", "list_changed"];
    assert_eq!(on_b.after(2).await, want, "the other replica");
    assert_eq!(on_a.after(2).await, want, "its own, once");
    assert!(on_c.after(1).await.is_empty(), "another store's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_replicas_hear_each_others_changes() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let url = server.url();
    let open = |schema: &'static str| {
        let url = url.clone();
        async move {
            PostgresStore::connect_with(&url, PostgresStoreOptions::default().with_schema(schema))
                .await
                .unwrap()
        }
    };
    told_across(
        open("feed_shared").await,
        open("feed_shared").await,
        open("feed_other").await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_replicas_hear_each_others_changes() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let open = |prefix: &'static str| {
        let url = server.url();
        async move {
            RedisStore::connect_with(&url, RedisStoreOptions::default().with_prefix(prefix))
                .await
                .unwrap()
        }
    };
    told_across(
        open("feed-shared:").await,
        open("feed-shared:").await,
        open("feed-other:").await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_hears_again_once_redis_is_back() {
    let Some(server) = Redis::start() else {
        return;
    };
    let open = || async {
        RedisStore::connect_with(&server.url(), RedisStoreOptions::default())
            .await
            .unwrap()
    };
    let (a, _on_a, _a) = replica(open().await);
    let (_b, on_b, _b_watch) = replica(open().await);
    server.crash();
    server.restart();
    // Resubscribed within its longest pause; publishing reconnects on demand.
    let deadline = Instant::now() + Duration::from_secs(15);
    while on_b.0.lock().unwrap().is_empty() && Instant::now() < deadline {
        a.resource_changes().updated("shop://catalog");
        sleep(Duration::from_millis(250)).await;
    }
    assert!(
        on_b.0
            .lock()
            .unwrap()
            .contains(&"shop://catalog".to_owned()),
        "heard after the restart"
    );
}
