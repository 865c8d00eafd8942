//! The default bounds of request ids: only writes keep one, so a share is a principal's writes
//! of the retention period, and the durable stores size it for what keeps them (a disk, a Redis
//! server), far past the in-memory store's.

use carmy_core::MemoryStoreLimits;
use carmy_store::{PostgresStoreOptions, RedisStoreOptions, SqliteStoreOptions};

#[test]
fn durable_stores_keep_millions_of_write_ids_per_principal() {
    let memory = MemoryStoreLimits::default();
    let (sqlite, postgres, redis) = (
        SqliteStoreOptions::default(),
        PostgresStoreOptions::default(),
        RedisStoreOptions::default(),
    );
    let durable = [
        ("sqlite", sqlite.request_ids),
        ("postgres", postgres.request_ids),
        ("redis", redis.request_ids),
    ];
    for (store, ids) in durable {
        let (keys, bytes) = (ids.max_per_principal, ids.max_bytes_per_principal);
        let (all_keys, all_bytes) = (ids.max, ids.max_bytes);
        assert!(keys >= 1_000_000, "{store}: {keys} keys per principal");
        assert!(
            keys >= 100 * memory.request_ids.max_per_principal,
            "{store}: {keys} keys per principal, sized like a process's memory"
        );
        // A key and a small outcome take well under a KiB: the bytes never refuse first.
        assert!(
            bytes >= keys * 1024,
            "{store}: {bytes} bytes for {keys} keys"
        );
        assert!(
            all_keys >= keys && all_bytes >= bytes,
            "{store}: totals under a share"
        );
    }
}
