//! Every redemption store passes the same contract, replicas included: one line each. And the
//! layouts that gained the redemptions migrate in place.

use carmy_store::redemption_conformance::RedemptionSetup;

mod memory {
    use super::*;
    use std::{
        collections::HashMap,
        sync::{Arc, Mutex},
    };

    use carmy_core::MemoryRedemptionStore;

    /// One store per setup: a replica of a store in memory is the same store.
    fn open(setup: RedemptionSetup) -> Arc<MemoryRedemptionStore> {
        static STORES: Mutex<Option<HashMap<String, Arc<MemoryRedemptionStore>>>> =
            Mutex::new(None);
        let mut stores = STORES.lock().unwrap();
        let stores = stores.get_or_insert_with(HashMap::new);
        Arc::clone(stores.entry(setup.name).or_default())
    }

    carmy_store::redemption_conformance_tests!(open);
}

mod sqlite {
    use super::*;
    use carmy_store::SqliteStore;

    carmy_store::redemption_conformance_tests!(|setup: RedemptionSetup| {
        SqliteStore::open(setup.dir.join("store.sqlite")).expect("a store")
    });
}

mod redis {
    use super::*;
    use carmy_store::{RedisStore, RedisStoreOptions};
    use test_servers::Redis;

    /// A store on the process's shared server, under the setup's own prefix.
    fn open(setup: RedemptionSetup) -> RedisStore {
        let server = Redis::shared().expect("the tests run only where Redis is installed");
        let options = RedisStoreOptions::default().with_prefix(format!("{}:", setup.name));
        // The opener runs on a blocking thread of the scenario's runtime.
        tokio::runtime::Handle::current()
            .block_on(RedisStore::connect_with(&server.url(), options))
            .expect("a store on the shared Redis")
    }

    // `shared()` prints why when Redis is not installed (and fails if servers are required).
    carmy_store::redemption_conformance_tests!(open, when = Redis::shared().is_some());
}

mod postgres {
    use super::*;
    use carmy_store::{PostgresStore, PostgresStoreOptions};
    use test_servers::Postgres;

    /// A store on the process's shared server, in the setup's own schema.
    fn open(setup: RedemptionSetup) -> PostgresStore {
        let server = Postgres::shared().expect("the tests run only where PostgreSQL is installed");
        let options = PostgresStoreOptions::default().with_schema(setup.name);
        tokio::runtime::Handle::current()
            .block_on(PostgresStore::connect_with(&server.url(), options))
            .expect("a store on the shared PostgreSQL")
    }

    carmy_store::redemption_conformance_tests!(open, when = Postgres::shared().is_some());
}

/// A file of layout 3 (claims, records and tasks, no redemptions), as the previous release left
/// it: opened, it moves to layout 4 in place, keeping its claims, and redeems from then on.
#[tokio::test]
async fn a_sqlite_file_of_the_third_layout_gains_redemptions_and_keeps_its_claims() {
    use std::time::Duration;

    use carmy_core::{
        Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore,
        LeaseTerms, Recorded, Redemption, RedemptionKey, RedemptionStore, Release,
    };
    use carmy_store::SqliteStore;

    let dir = std::env::temp_dir().join(format!(
        "carmy-redemption-layout-3-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("store.sqlite");
    let key = IdempotencyKey::new(Some("alice"), "before");
    let fingerprint = Fingerprint::of("pay", &serde_json::json!({}));
    let terms = LeaseTerms {
        duration: Duration::from_secs(60),
        if_lost: Release::Uncertain(ExecutionStatus::Lost),
    };
    let recorded = Recorded::new(
        ExecutionId::from("exec_before"),
        ExecutionStatus::Succeeded,
        Ok(serde_json::json!(1)),
    );
    let store = SqliteStore::open(&file).unwrap();
    let Claim::Acquired(lease) = store.claim(&key, fingerprint, terms).await.unwrap() else {
        panic!("a fresh key is acquired");
    };
    store.finish(&lease, recorded.clone()).await.unwrap();
    drop(store);
    // Back to what layout 3 wrote: no redemptions.
    let connection = rusqlite_connection(&file);
    connection
        .execute_batch(
            "DROP TABLE carmy_redeemed; DROP TABLE carmy_redeemers; PRAGMA user_version = 3;",
        )
        .unwrap();
    drop(connection);

    let store = SqliteStore::open(&file).unwrap();
    let version: i64 = rusqlite_connection(&file)
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 4);
    match store.claim(&key, fingerprint, terms).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded),
        other => panic!("{other:?}"),
    }
    let token = RedemptionKey::new(Some("alice"), 1_000, 1);
    let ttl = Duration::from_secs(60);
    assert_eq!(
        store.redeem(&token, ttl, 2_000).await.unwrap(),
        Redemption::Redeemed
    );
    assert_eq!(
        store.redeem(&token, ttl, 2_000).await.unwrap(),
        Redemption::AlreadyUsed
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The tests open the file behind the store's back with a client of their own.
fn rusqlite_connection(file: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(file).unwrap()
}

/// A schema of layout 3, as the previous release left it, reached by three replicas of this
/// one at once: migrated once, to this layout (5: redemptions, then rate limits), in place; its claims kept, and redemptions shared
/// by the replicas from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_schema_of_layout_3_gains_redemptions_in_place() {
    use std::time::Duration;

    use carmy_core::{
        Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore,
        LeaseTerms, Recorded, Redemption, RedemptionKey, RedemptionStore, Release,
    };
    use carmy_store::{PostgresStore, PostgresStoreOptions};
    use test_servers::Postgres;

    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = format!("layout3_{}", uuid::Uuid::new_v4().simple());
    let options = PostgresStoreOptions::default().with_schema(&schema);
    let key = IdempotencyKey::new(Some("alice"), "before");
    let fingerprint = Fingerprint::of("pay", &serde_json::json!({}));
    let terms = LeaseTerms {
        duration: Duration::from_secs(60),
        if_lost: Release::Uncertain(ExecutionStatus::Lost),
    };
    let recorded = Recorded::new(
        ExecutionId::from("exec_before"),
        ExecutionStatus::Succeeded,
        Ok(serde_json::json!(1)),
    );
    let old = PostgresStore::connect_with(&server.url(), options.clone())
        .await
        .unwrap();
    let Claim::Acquired(lease) = old.claim(&key, fingerprint, terms).await.unwrap() else {
        panic!("a fresh key is acquired");
    };
    old.finish(&lease, recorded.clone()).await.unwrap();
    drop(old);
    server.sql(&format!(
        "DROP TABLE {schema}.redeemed, {schema}.redeemers, {schema}.rate_buckets; \
         DROP FUNCTION {schema}.take_rate(bytea, bytea, int8, int8); \
         DROP FUNCTION {schema}.redeem(bytea, int8, int8, int8, int8, int8, int8, int8); \
         DROP FUNCTION {schema}.claim(bytea, bytea, bytea, bytea, text, int8, int8, int8, int8, \
         int8, int8); \
         DROP FUNCTION {schema}.finish(bytea, bytea, bytea, text, text, int8, int8, int8, int8, \
         int8); \
         UPDATE {schema}.meta SET version = 3"
    ));

    let connects: Vec<_> = (0..3)
        .map(|_| {
            let (url, options) = (server.url(), options.clone());
            tokio::spawn(async move { PostgresStore::connect_with(&url, options).await })
        })
        .collect();
    let mut replicas = Vec::new();
    for connect in connects {
        replicas.push(connect.await.unwrap().expect("every replica connects"));
    }
    assert_eq!(
        server.sql(&format!("SELECT version FROM {schema}.meta")),
        "6"
    );
    match replicas[0].claim(&key, fingerprint, terms).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded),
        other => panic!("{other:?}"),
    }
    let token = RedemptionKey::new(Some("alice"), 1_000, 1);
    let ttl = Duration::from_secs(60);
    assert_eq!(
        replicas[1].redeem(&token, ttl, 2_000).await.unwrap(),
        Redemption::Redeemed
    );
    assert_eq!(
        replicas[2].redeem(&token, ttl, 2_000).await.unwrap(),
        Redemption::AlreadyUsed
    );
}
