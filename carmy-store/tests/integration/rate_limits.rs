//! Rate-limit buckets on the server stores, against real servers: replicas on one database
//! share one limit, tools and principals never share a bucket, a bucket refills after its
//! emission interval, full buckets are forgotten (the sweep's rows, the keys' expiry), and a
//! PostgreSQL schema of layout 4 gains the buckets in place. Without the servers installed the
//! tests pass without running (see `test_servers`).

use std::time::Duration;

use carmy_core::{RateLimit, RateLimitStore};

/// Burst 5, then one call an hour: nothing refills while a test runs.
const SLOW: RateLimit = RateLimit::per_hour(1).burst(5);

/// 15 takes of one bucket spread over `replicas` in turn: 5 admitted, 10 refused with a wait.
async fn fifteen_takes_share_one_burst<S: RateLimitStore>(replicas: &[S]) {
    let mut admitted = 0;
    for i in 0..15 {
        match replicas[i % replicas.len()]
            .take("search", Some("alice"), SLOW)
            .await
            .expect("the store answers")
        {
            Ok(()) => {
                assert!(i < 5, "take {i} admitted past the burst");
                admitted += 1;
            }
            Err(wait) => {
                assert!(wait > Duration::ZERO);
                // The sixth call comes back an hour after the first.
                assert!(wait <= Duration::from_secs(3600), "{wait:?}");
                assert!(wait > Duration::from_secs(3500), "{wait:?}");
            }
        }
    }
    assert_eq!(admitted, 5);
}

/// Each tool and each principal (the anonymous one too) has a bucket of its own.
async fn buckets_are_per_tool_and_principal<S: RateLimitStore>(store: &S) {
    let one = RateLimit::per_hour(1).burst(1);
    assert_eq!(
        store.take("search", Some("alice"), one).await.unwrap(),
        Ok(())
    );
    assert!(
        store
            .take("search", Some("alice"), one)
            .await
            .unwrap()
            .is_err()
    );
    assert_eq!(
        store.take("search", Some("bob"), one).await.unwrap(),
        Ok(())
    );
    assert_eq!(
        store.take("order", Some("alice"), one).await.unwrap(),
        Ok(())
    );
    assert_eq!(store.take("search", None, one).await.unwrap(), Ok(()));
    assert!(store.take("search", None, one).await.unwrap().is_err());
    // A principal's braces are escaped in Redis's hash tags, never mistaken for another's.
    assert_eq!(
        store.take("search", Some("{a}"), one).await.unwrap(),
        Ok(())
    );
    assert_eq!(
        store.take("search", Some("%7Ba%7D"), one).await.unwrap(),
        Ok(())
    );
}

/// A bucket of burst 1 refills after one emission interval (100 ms), not before.
async fn a_bucket_refills_after_the_emission_interval<S: RateLimitStore>(store: &S) {
    let limit = RateLimit::per_second(10).burst(1);
    assert_eq!(
        store.take("ping", Some("alice"), limit).await.unwrap(),
        Ok(())
    );
    let wait = store
        .take("ping", Some("alice"), limit)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(100),
        "{wait:?}"
    );
    tokio::time::sleep(wait + Duration::from_millis(5)).await;
    assert_eq!(
        store.take("ping", Some("alice"), limit).await.unwrap(),
        Ok(())
    );
    assert!(
        store
            .take("ping", Some("alice"), limit)
            .await
            .unwrap()
            .is_err()
    );
}

mod postgres {
    use super::*;
    use carmy_store::{PostgresStore, PostgresStoreOptions};
    use test_servers::Postgres;

    /// A schema no other test uses.
    fn schema(name: &str) -> String {
        format!("{name}_{}", uuid::Uuid::new_v4().simple())
    }

    async fn open(server: &Postgres, schema: &str) -> PostgresStore {
        let options = PostgresStoreOptions::default().with_schema(schema);
        PostgresStore::connect_with(&server.url(), options)
            .await
            .expect("a store on the shared PostgreSQL")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_replicas_share_one_limit() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let schema = schema("rate_shared");
        let replicas = [open(server, &schema).await, open(server, &schema).await];
        fifteen_takes_share_one_burst(&replicas).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_takes_on_two_replicas_admit_the_burst_once() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let schema = schema("rate_race");
        let replicas =
            std::sync::Arc::new([open(server, &schema).await, open(server, &schema).await]);
        let takes: Vec<_> = (0..20)
            .map(|i| {
                let replicas = std::sync::Arc::clone(&replicas);
                tokio::spawn(async move {
                    replicas[i % 2]
                        .take("search", Some("alice"), SLOW)
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut admitted = 0;
        for take in takes {
            admitted += usize::from(take.await.unwrap().is_ok());
        }
        assert_eq!(admitted, 5);
    }

    #[tokio::test]
    async fn principals_and_tools_never_share_a_bucket() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        buckets_are_per_tool_and_principal(&open(server, &schema("rate_keys")).await).await;
    }

    #[tokio::test]
    async fn the_bucket_refills_after_the_emission_interval() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        a_bucket_refills_after_the_emission_interval(&open(server, &schema("rate_refill")).await)
            .await;
    }

    /// The sweep deletes the rows of buckets full again, and keeps the others.
    #[tokio::test]
    async fn the_sweep_forgets_full_buckets() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let schema = schema("rate_sweep");
        let store = open(server, &schema).await;
        let quick = RateLimit::per_second(100).burst(1);
        for principal in ["a", "b", "c"] {
            assert_eq!(
                store.take("ping", Some(principal), quick).await.unwrap(),
                Ok(())
            );
        }
        assert_eq!(store.take("ping", Some("d"), SLOW).await.unwrap(), Ok(()));
        let rows = || server.sql(&format!("SELECT count(*) FROM {schema}.rate_buckets"));
        assert_eq!(rows(), "4");
        tokio::time::sleep(Duration::from_millis(50)).await;
        store.sweep().await.unwrap();
        assert_eq!(rows(), "1", "only the slow bucket is still drawn");
    }

    /// A schema of layout 4, as the previous release left it, reached by two replicas of this
    /// one: migrated to this layout in place, its redemptions kept, and one limit shared.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_postgres_schema_of_layout_4_gains_rate_limits_in_place() {
        use carmy_core::{Redemption, RedemptionKey, RedemptionStore};

        let Some(server) = Postgres::shared() else {
            return;
        };
        let schema = schema("layout4");
        let old = open(server, &schema).await;
        let token = RedemptionKey::new(Some("alice"), 1_000, 1);
        let ttl = Duration::from_secs(60);
        assert_eq!(
            old.redeem(&token, ttl, 2_000).await.unwrap(),
            Redemption::Redeemed
        );
        drop(old);
        server.sql(&format!(
            "DROP TABLE {schema}.rate_buckets; \
             DROP FUNCTION {schema}.take_rate(bytea, bytea, int8, int8); \
             DROP FUNCTION {schema}.claim(bytea, bytea, bytea, bytea, text, int8, int8, int8, \
             int8, int8, int8); \
             DROP FUNCTION {schema}.finish(bytea, bytea, bytea, text, text, int8, int8, int8, \
             int8, int8); \
             UPDATE {schema}.meta SET version = 4"
        ));
        let replicas = [open(server, &schema).await, open(server, &schema).await];
        assert_eq!(
            server.sql(&format!("SELECT version FROM {schema}.meta")),
            "6"
        );
        assert_eq!(
            replicas[1].redeem(&token, ttl, 3_000).await.unwrap(),
            Redemption::AlreadyUsed
        );
        fifteen_takes_share_one_burst(&replicas).await;
    }
}

mod redis {
    use super::*;
    use carmy_store::{RedisStore, RedisStoreOptions};
    use test_servers::Redis;

    /// A store on the shared server, under `prefix`.
    async fn open(server: &Redis, prefix: &str) -> RedisStore {
        let options = RedisStoreOptions::default().with_prefix(prefix);
        RedisStore::connect_with(&server.url(), options)
            .await
            .expect("a store on the shared Redis")
    }

    /// A prefix no other test uses.
    fn prefix(name: &str) -> String {
        format!("{name}-{}:", uuid::Uuid::new_v4().simple())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_replicas_share_one_limit() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let prefix = prefix("rate-shared");
        let replicas = [open(server, &prefix).await, open(server, &prefix).await];
        fifteen_takes_share_one_burst(&replicas).await;
    }

    #[tokio::test]
    async fn principals_and_tools_never_share_a_bucket() {
        let Some(server) = Redis::shared() else {
            return;
        };
        buckets_are_per_tool_and_principal(&open(server, &prefix("rate-keys")).await).await;
    }

    #[tokio::test]
    async fn the_bucket_refills_after_the_emission_interval() {
        let Some(server) = Redis::shared() else {
            return;
        };
        a_bucket_refills_after_the_emission_interval(&open(server, &prefix("rate-refill")).await)
            .await;
    }

    /// A bucket's key expires when the bucket is full again: an hour after one call of a
    /// limit of one an hour, at once after one of a hundred a second.
    #[tokio::test]
    async fn a_bucket_s_key_expires_when_it_is_full_again() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let prefix = prefix("rate-expiry");
        let store = open(server, &prefix).await;
        let hourly = RateLimit::per_hour(1);
        assert_eq!(
            store.take("search", Some("alice"), hourly).await.unwrap(),
            Ok(())
        );
        assert_eq!(
            store
                .take("ping", Some("bob"), RateLimit::per_second(100))
                .await
                .unwrap(),
            Ok(())
        );
        let mut raw = ::redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let key = format!("{prefix}{{p:alice}}:rate:search");
        let ttl: i64 = ::redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(ttl > 3_590_000 && ttl <= 3_600_000, "{ttl}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!(keys, [key]);
    }
}
