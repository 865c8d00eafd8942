//! Every store passes the same contract: one line each.

use carmy_store::conformance::Setup;

mod memory {
    use super::*;
    use carmy_core::{MemoryStore, MemoryStoreLimits};

    carmy_store::conformance_tests!(|setup: Setup| {
        MemoryStore::new(
            MemoryStoreLimits::default().with_request_ids(|ids| {
                ids.with_max_per_principal(setup.max_entries_per_principal)
            }),
        )
    });

    mod records {
        use super::*;

        carmy_store::record_conformance_tests!(|_: Setup| MemoryStore::default());
    }

    mod unclaimed {
        use super::*;

        carmy_store::unclaimed_conformance_tests!(|setup: Setup| {
            MemoryStore::new(MemoryStoreLimits::default().with_request_ids(|ids| {
                ids.with_max_per_principal(setup.max_entries_per_principal)
            }))
        });
    }
}

mod sqlite {
    use super::*;
    use carmy_store::{SqliteStore, SqliteStoreOptions};

    carmy_store::conformance_tests!(|setup: Setup| {
        SqliteStore::open_with(
            setup.dir.join("store.sqlite"),
            SqliteStoreOptions::default().with_request_ids(|ids| {
                ids.with_max_per_principal(setup.max_entries_per_principal)
            }),
        )
        .expect("a fresh store")
    });

    mod records {
        use super::*;

        carmy_store::record_conformance_tests!(|setup: Setup| {
            SqliteStore::open(setup.dir.join("store.sqlite")).expect("a fresh store")
        });
    }

    mod unclaimed {
        use super::*;

        carmy_store::unclaimed_conformance_tests!(|setup: Setup| {
            SqliteStore::open_with(
                setup.dir.join("store.sqlite"),
                SqliteStoreOptions::default().with_request_ids(|ids| {
                    ids.with_max_per_principal(setup.max_entries_per_principal)
                }),
            )
            .expect("a fresh store")
        });
    }

    mod tasks {
        use super::*;
        use carmy_store::task_conformance::TaskSetup;

        carmy_store::task_conformance_tests!(|setup: TaskSetup| {
            SqliteStore::open_with(
                setup.dir.join("store.sqlite"),
                SqliteStoreOptions::default().with_tasks(|tasks| {
                    tasks.with_max_per_principal(setup.max_tasks_per_principal)
                }),
            )
            .expect("a fresh store")
        });
    }
}

mod redis {
    use super::*;
    use carmy_store::{RedisStore, RedisStoreOptions};
    use test_servers::Redis;

    /// A store on the process's shared server, with a prefix of its own: every store a
    /// scenario opens starts empty, whatever the others wrote.
    fn open(setup: Setup) -> RedisStore {
        let server = Redis::shared().expect("the tests run only where Redis is installed");
        let options = RedisStoreOptions::default()
            .with_request_ids(|ids| ids.with_max_per_principal(setup.max_entries_per_principal))
            .with_prefix(format!("conformance-{}:", uuid::Uuid::new_v4().simple()));
        // The opener runs on a blocking thread of the scenario's runtime.
        tokio::runtime::Handle::current()
            .block_on(RedisStore::connect_with(&server.url(), options))
            .expect("a store on the shared Redis")
    }

    // `shared()` prints why when Redis is not installed (and fails if servers are required).
    carmy_store::conformance_tests!(open, when = Redis::shared().is_some());

    mod records {
        use super::*;

        carmy_store::record_conformance_tests!(open, when = Redis::shared().is_some());
    }

    mod unclaimed {
        use super::*;

        carmy_store::unclaimed_conformance_tests!(open, when = Redis::shared().is_some());
    }

    mod tasks {
        use super::*;
        use carmy_store::task_conformance::TaskSetup;

        /// A store on the shared server with a prefix of its own, as for claims.
        fn open(setup: TaskSetup) -> RedisStore {
            let server = Redis::shared().expect("the tests run only where Redis is installed");
            let options = RedisStoreOptions::default()
                .with_tasks(|tasks| tasks.with_max_per_principal(setup.max_tasks_per_principal))
                .with_prefix(format!("tasks-{}:", uuid::Uuid::new_v4().simple()));
            tokio::runtime::Handle::current()
                .block_on(RedisStore::connect_with(&server.url(), options))
                .expect("a store on the shared Redis")
        }

        carmy_store::task_conformance_tests!(open, when = Redis::shared().is_some());
    }
}

/// Against the test process's PostgreSQL server, each store in a schema of its own (so they
/// never meet); skipped with a notice where PostgreSQL is not installed.
mod postgres {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use carmy_store::{PostgresStore, PostgresStoreOptions};
    use test_servers::Postgres;

    fn open(setup: Setup) -> PostgresStore {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let server = Postgres::shared().expect("the tests run only where PostgreSQL is installed");
        let schema = format!("conformance_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let options = PostgresStoreOptions::default()
            .with_schema(schema)
            .with_request_ids(|ids| ids.with_max_per_principal(setup.max_entries_per_principal));
        // The opener runs on a blocking thread of the scenario's runtime.
        tokio::runtime::Handle::current()
            .block_on(PostgresStore::connect_with(&server.url(), options))
            .expect("a fresh store")
    }

    carmy_store::conformance_tests!(open, when = Postgres::shared().is_some());

    mod records {
        use super::*;

        carmy_store::record_conformance_tests!(open, when = Postgres::shared().is_some());
    }

    mod unclaimed {
        use super::*;

        carmy_store::unclaimed_conformance_tests!(open, when = Postgres::shared().is_some());
    }

    mod tasks {
        use super::*;
        use carmy_store::task_conformance::TaskSetup;

        fn open(setup: TaskSetup) -> PostgresStore {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let server =
                Postgres::shared().expect("the tests run only where PostgreSQL is installed");
            let schema = format!("task_conformance_{}", NEXT.fetch_add(1, Ordering::Relaxed));
            let options = PostgresStoreOptions::default()
                .with_schema(schema)
                .with_tasks(|tasks| tasks.with_max_per_principal(setup.max_tasks_per_principal));
            // The opener runs on a blocking thread of the scenario's runtime.
            tokio::runtime::Handle::current()
                .block_on(PostgresStore::connect_with(&server.url(), options))
                .expect("a fresh store")
        }

        carmy_store::task_conformance_tests!(open, when = Postgres::shared().is_some());
    }
}

/// The one-call form runs the same scenarios.
#[test]
fn run_all_runs_every_scenario_on_the_file_store() {
    carmy_store::conformance::run_all(|setup: Setup| {
        carmy_store::SqliteStore::open_with(
            setup.dir.join("store.sqlite"),
            carmy_store::SqliteStoreOptions::default().with_request_ids(|ids| {
                ids.with_max_per_principal(setup.max_entries_per_principal)
            }),
        )
        .expect("a fresh store")
    });
}
