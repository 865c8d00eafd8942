//! The contract of [`TaskStore`], as scenarios every task store must pass: the store's own
//! calls, and runtimes sharing one store the way replicas do.
//!
//! A store joins with one line in a test file of its crate, naming how to open a fresh, empty
//! store for a [`TaskSetup`]; each scenario becomes a `#[test]` of its own:
//!
//! ```
//! use carmy_core::{MemoryTaskStore, MemoryTaskStoreLimits};
//! use carmy_store::task_conformance::TaskSetup;
//!
//! carmy_store::task_conformance_tests!(|setup: TaskSetup| {
//!     MemoryTaskStore::new(
//!         MemoryTaskStoreLimits::default()
//!             .with_tasks(|tasks| tasks.with_max_per_principal(setup.max_tasks_per_principal)),
//!     )
//! });
//! # fn main() {}
//! ```
//!
//! or runs them all in one test with [`run_all`]. Scenarios use the real clock, with leases and
//! retention of a few hundred milliseconds where they need one to run out; each takes about a
//! second at most.
//!
//! The replica scenarios build two [`Runtime`]s over one store (`Arc<S>`), as two processes
//! would share a database: what one writes (a cancel request, answers) must reach the task the
//! other runs, and a replica that dies (its tokio runtime shut down with the task running)
//! must leave its task `failed` once its lease runs out.
//!
//! The scenarios, by concern: `lifecycle` (statuses and outcomes), `expiry` (retention, lost
//! leases, renewals), `cancels`, `answers`, `bounds` (shares, principals apart) and `replicas`;
//! `opener` opens their stores and `support` holds what they share.

mod answers;
mod bounds;
mod cancels;
mod expiry;
mod lifecycle;
mod opener;
mod replicas;
mod support;

pub use answers::{answers_reach_the_holder, partial_answers_keep_the_task_waiting};
pub use bounds::{capacity_fails_closed, principals_never_meet};
pub use cancels::{cancel_of_an_ended_task_changes_nothing, cancel_reaches_the_holder};
pub use expiry::{
    kept_for_its_ttl_then_forgotten, lease_loss_fails_the_task, renewals_keep_a_task,
};
pub use lifecycle::{outcomes_round_trip, status_transitions};
pub use opener::{TaskOpener, TaskSetup, check};
pub use replicas::{
    dead_replicas_task_fails, replica_answers_anothers_task, replica_cancels_anothers_task,
};

use carmy_core::TaskStore;

/// Every scenario, one after the other, against stores opened by `open`.
pub fn run_all<S, F>(open: F)
where
    S: TaskStore,
    F: Fn(TaskSetup) -> S + Clone + Send + Sync + 'static,
{
    macro_rules! all {
        ($($name:ident),* $(,)?) => {
            $( check(stringify!($name), open.clone(), $name); )*
        };
    }
    all!(
        status_transitions,
        outcomes_round_trip,
        kept_for_its_ttl_then_forgotten,
        lease_loss_fails_the_task,
        renewals_keep_a_task,
        cancel_reaches_the_holder,
        cancel_of_an_ended_task_changes_nothing,
        answers_reach_the_holder,
        partial_answers_keep_the_task_waiting,
        capacity_fails_closed,
        principals_never_meet,
        replica_cancels_anothers_task,
        replica_answers_anothers_task,
        dead_replicas_task_fails,
    );
}

/// One `#[test]` per scenario of the [`task_conformance`](crate::task_conformance) suite, for
/// the store the closure opens (`Fn(TaskSetup) -> impl TaskStore`); `when = EXPR` as for
/// [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! task_conformance_tests {
    ($open:expr $(,)?) => {
        $crate::task_conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__scenario_tests!(
            task_conformance, task_conformance, $open, $available;
            status_transitions,
            outcomes_round_trip,
            kept_for_its_ttl_then_forgotten,
            lease_loss_fails_the_task,
            renewals_keep_a_task,
            cancel_reaches_the_holder,
            cancel_of_an_ended_task_changes_nothing,
            answers_reach_the_holder,
            partial_answers_keep_the_task_waiting,
            capacity_fails_closed,
            principals_never_meet,
            replica_cancels_anothers_task,
            replica_answers_anothers_task,
            dead_replicas_task_fails,
        );
    };
}
