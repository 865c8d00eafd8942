//! The contract of [`RedemptionStore`], as scenarios every redemption store must pass: a
//! single-use token redeemed once, its principal's alone, within the bounds, until it expires,
//! and once across replicas.
//!
//! A store joins with one line in a test file of its crate, naming how to open the store a
//! [`RedemptionSetup`] describes; each scenario becomes a `#[test]` of its own. The same setup
//! is given again for a replica, which must share the first store's records (the same file,
//! schema or key prefix; for a store in memory, the same store):
//!
//! ```
//! use std::{collections::HashMap, sync::{Arc, Mutex}};
//! use carmy_core::MemoryRedemptionStore;
//! use carmy_store::redemption_conformance::RedemptionSetup;
//!
//! fn open(setup: RedemptionSetup) -> Arc<MemoryRedemptionStore> {
//!     static STORES: Mutex<Option<HashMap<String, Arc<MemoryRedemptionStore>>>> = Mutex::new(None);
//!     let mut stores = STORES.lock().unwrap();
//!     let stores = stores.get_or_insert_with(HashMap::new);
//!     Arc::clone(stores.entry(setup.name).or_default())
//! }
//!
//! carmy_store::redemption_conformance_tests!(open);
//! # fn main() {}
//! ```
//!
//! or runs them all in one test with [`run_all`]. Scenarios move the caller's clock themselves
//! (`now_ms`), and take their records' ttl long enough that no store's own timer ends one while
//! they run. The flood and the crowd redeem as many tokens as the bounds
//! ([`MAX_REDEEMED_PER_PRINCIPAL`](carmy_core::MAX_REDEEMED_PER_PRINCIPAL),
//! [`MAX_REDEEMING_PRINCIPALS`](carmy_core::MAX_REDEEMING_PRINCIPALS)), one at a time.
//!
//! The scenarios, by concern: `once` (once, principals apart, replicas), `bounds` (the flood's
//! floor, the crowd of principals) and `expiry`; `opener` opens their stores and `support`
//! holds what they share.

mod bounds;
mod expiry;
mod once;
mod opener;
mod support;

pub use bounds::{a_flood_supersedes_only_older_tokens, principals_past_the_bound_wait};
pub use expiry::{a_floor_expires_with_its_records, records_expire_with_their_tokens};
pub use once::{principals_never_meet, redeemed_once, replicas_redeem_once};
pub use opener::{RedemptionOpener, RedemptionSetup, check};

use carmy_core::RedemptionStore;

/// Every scenario, one after the other, against stores opened by `open`.
pub fn run_all<S, F>(open: F)
where
    S: RedemptionStore,
    F: Fn(RedemptionSetup) -> S + Clone + Send + Sync + 'static,
{
    macro_rules! all {
        ($($name:ident),* $(,)?) => {
            $( check(stringify!($name), open.clone(), $name); )*
        };
    }
    all!(
        redeemed_once,
        principals_never_meet,
        replicas_redeem_once,
        a_flood_supersedes_only_older_tokens,
        principals_past_the_bound_wait,
        records_expire_with_their_tokens,
        a_floor_expires_with_its_records,
    );
}

/// One `#[test]` per scenario of the [`redemption_conformance`](crate::redemption_conformance)
/// suite, for the store the closure opens (`Fn(RedemptionSetup) -> impl RedemptionStore`);
/// `when = EXPR` as for [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! redemption_conformance_tests {
    ($open:expr $(,)?) => {
        $crate::redemption_conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__scenario_tests!(
            redemption_conformance, redemption_conformance, $open, $available;
            redeemed_once,
            principals_never_meet,
            replicas_redeem_once,
            a_flood_supersedes_only_older_tokens,
            principals_past_the_bound_wait,
            records_expire_with_their_tokens,
            a_floor_expires_with_its_records,
        );
    };
}
