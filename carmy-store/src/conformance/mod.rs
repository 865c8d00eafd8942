//! The contract of [`IdempotencyStore`], as scenarios every store must pass.
//!
//! A store joins with one line in a test file of its crate, naming how to open a fresh,
//! empty store for a [`Setup`]; each scenario becomes a `#[test]` of its own:
//!
//! ```
//! use carmy_core::{MemoryStore, MemoryStoreLimits};
//! use carmy_store::conformance::Setup;
//!
//! carmy_store::conformance_tests!(|setup: Setup| {
//!     MemoryStore::new(
//!         MemoryStoreLimits::default()
//!             .with_request_ids(|ids| ids.with_max_per_principal(setup.max_entries_per_principal)),
//!     )
//! });
//! # fn main() {}
//! ```
//!
//! or runs them all in one test with [`run_all`]. Scenarios use the real clock (a file or a
//! server does not follow tokio's paused time), with leases of a few hundred milliseconds where
//! they need one to run out; each takes about a second at most.
//!
//! A store kept on a server also runs [`fails_closed_while_down`], given an [`Outage`] that
//! takes its server down and brings it back.
//!
//! The scenarios, by concern: `outcomes` (replay, conflicts, principals apart), `waiters`
//! (retries that wait and wake), `leases` (leases that run out), `capacity` (bounds that fail
//! closed), `concurrency` (one winner, one run) and `outage`; `opener` opens their stores and
//! `support` holds what they share.

mod capacity;
mod concurrency;
mod leases;
mod opener;
mod outage;
mod outcomes;
mod support;
mod waiters;

pub use capacity::{a_full_share_refuses_new_writes_only, capacity_fails_closed};
pub use concurrency::{concurrent_claims_one_winner, nothing_runs_twice};
pub use leases::{
    late_holder_gets_lease_lost, retry_after_lost_read_lease, uncertain_after_lost_write_lease,
};
pub use opener::{Opener, Setup, check};
pub use outage::{Outage, fails_closed_while_down};
pub use outcomes::{conflict, principals_never_meet, replay};
pub use waiters::{lease_expiry_wakes_waiters, released_claim_runs_again, wait_then_replay};

use carmy_core::IdempotencyStore;

/// Every scenario, one after the other, against stores opened by `open`.
pub fn run_all<S, F>(open: F)
where
    S: IdempotencyStore,
    F: Fn(Setup) -> S + Clone + Send + Sync + 'static,
{
    macro_rules! all {
        ($($name:ident),* $(,)?) => {
            $( check(stringify!($name), open.clone(), $name); )*
        };
    }
    all!(
        replay,
        conflict,
        wait_then_replay,
        released_claim_runs_again,
        uncertain_after_lost_write_lease,
        retry_after_lost_read_lease,
        lease_expiry_wakes_waiters,
        late_holder_gets_lease_lost,
        capacity_fails_closed,
        a_full_share_refuses_new_writes_only,
        concurrent_claims_one_winner,
        nothing_runs_twice,
        principals_never_meet,
    );
}

/// One `#[test]` per scenario of the [`conformance`](crate::conformance) suite, for the store
/// the closure opens (`Fn(Setup) -> impl IdempotencyStore`).
///
/// A store kept on a server that a machine may lack adds `when = EXPR`: each test evaluates
/// `EXPR` first and, unless it is `true`, returns without running (say why where `EXPR` is
/// decided: a skipped test passes silently).
///
/// ```
/// # use carmy_core::{MemoryStore, MemoryStoreLimits};
/// # fn server_is_installed() -> bool { true }
/// carmy_store::conformance_tests!(
///     |_setup: carmy_store::conformance::Setup| MemoryStore::new(MemoryStoreLimits::default()),
///     when = server_is_installed()
/// );
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($open:expr $(,)?) => {
        $crate::conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__scenario_tests!(
            conformance, conformance, $open, $available;
            replay,
            conflict,
            wait_then_replay,
            released_claim_runs_again,
            uncertain_after_lost_write_lease,
            retry_after_lost_read_lease,
            lease_expiry_wakes_waiters,
            late_holder_gets_lease_lost,
            capacity_fails_closed,
            a_full_share_refuses_new_writes_only,
            concurrent_claims_one_winner,
            nothing_runs_twice,
            principals_never_meet,
        );
    };
}
