//! What the scenarios share: a clock, a ttl, and tokens.

use std::time::Duration;

use carmy_core::{Redemption, RedemptionKey, RedemptionStore};

/// The scenarios' wall clock at their start, in milliseconds since the epoch (late 2023): the
/// caller's clock is the scenario's to move.
pub(super) const START: u64 = 1_700_000_000_000;

/// How long a record lives: long enough that nothing a store does on the real clock (a key's
/// TTL) ends it during a scenario.
pub(super) const TTL: Duration = Duration::from_secs(600);

/// [`TTL`] in milliseconds.
pub(super) const TTL_MS: u64 = 600_000;

/// The token of `principal` issued at `at` with `nonce`.
pub(super) fn token(principal: Option<&str>, at: u64, nonce: u64) -> RedemptionKey {
    RedemptionKey::new(principal, at, nonce)
}

/// Redeems `token` at `now` under [`TTL`]; a store that cannot answer fails the scenario.
pub(super) async fn redeem<S: RedemptionStore>(
    store: &S,
    token: &RedemptionKey,
    now: u64,
) -> Redemption {
    store
        .redeem(token, TTL, now)
        .await
        .unwrap_or_else(|error| panic!("redeeming {token:?} at {now}: {error}"))
}
