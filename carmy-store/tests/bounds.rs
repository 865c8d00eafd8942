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
    // (store, keys per principal, bytes per principal, keys in all, bytes in all)
    let durable = [
        (
            "sqlite",
            sqlite.max_entries_per_principal,
            sqlite.max_bytes_per_principal,
            sqlite.max_entries,
            sqlite.max_bytes,
        ),
        (
            "postgres",
            postgres.max_entries_per_principal,
            postgres.max_bytes_per_principal,
            postgres.max_entries,
            postgres.max_bytes,
        ),
        (
            "redis",
            redis.max_entries_per_principal,
            redis.max_bytes_per_principal,
            redis.max_entries,
            redis.max_bytes,
        ),
    ];
    for (store, keys, bytes, all_keys, all_bytes) in durable {
        assert!(keys >= 1_000_000, "{store}: {keys} keys per principal");
        assert!(
            keys >= 100 * memory.max_entries_per_principal,
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
