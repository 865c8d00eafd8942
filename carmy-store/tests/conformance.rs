//! Every store passes the same contract: one line each (PostgreSQL and Redis join here).

use carmy_store::conformance::Setup;

mod memory {
    use super::*;
    use carmy_core::{MemoryStore, MemoryStoreLimits};

    carmy_store::conformance_tests!(|setup: Setup| {
        MemoryStore::new(
            MemoryStoreLimits::default()
                .with_max_entries_per_principal(setup.max_entries_per_principal),
        )
    });

    mod records {
        use super::*;

        carmy_store::record_conformance_tests!(|_: Setup| MemoryStore::default());
    }
}

mod sqlite {
    use super::*;
    use carmy_store::{SqliteStore, SqliteStoreOptions};

    carmy_store::conformance_tests!(|setup: Setup| {
        SqliteStore::open_with(
            setup.dir.join("store.sqlite"),
            SqliteStoreOptions::default()
                .with_max_entries_per_principal(setup.max_entries_per_principal),
        )
        .expect("a fresh store")
    });

    mod records {
        use super::*;

        carmy_store::record_conformance_tests!(|setup: Setup| {
            SqliteStore::open(setup.dir.join("store.sqlite")).expect("a fresh store")
        });
    }
}

/// The one-call form runs the same scenarios.
#[test]
fn run_all_runs_every_scenario_on_the_file_store() {
    carmy_store::conformance::run_all(|setup: Setup| {
        carmy_store::SqliteStore::open_with(
            setup.dir.join("store.sqlite"),
            carmy_store::SqliteStoreOptions::default()
                .with_max_entries_per_principal(setup.max_entries_per_principal),
        )
        .expect("a fresh store")
    });
}
