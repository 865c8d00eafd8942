//! Every task store passes the same contract: one line each (durable stores join here).

use carmy_store::task_conformance::TaskSetup;

mod memory {
    use super::*;
    use carmy_core::{MemoryTaskStore, MemoryTaskStoreLimits};

    carmy_store::task_conformance_tests!(|setup: TaskSetup| {
        MemoryTaskStore::new(
            MemoryTaskStoreLimits::default()
                .with_tasks(|tasks| tasks.with_max_per_principal(setup.max_tasks_per_principal)),
        )
    });
}
