//! Single use: a token (a sealed request state that carries a confirmation) is redeemed once,
//! whichever replica sees it.
//!
//! The runtime does not issue tokens; an adapter does (carmy-mcp seals the 2026-07-28
//! `requestState`) and asks a [`RedemptionStore`] before it honours one. A token is named by
//! its principal, the wall-clock instant it was issued at and a random nonce
//! ([`RedemptionKey`]); the store remembers each redeemed token until it expires
//! (`issued_at_ms + ttl`), and says [`Redemption::AlreadyUsed`] to every later attempt.
//!
//! # Bounds
//!
//! A principal that redeems a flood of tokens must cost only its own older, unanswered
//! questions, never another principal's. So each principal keeps at most
//! [`MAX_REDEEMED_PER_PRINCIPAL`] records: past it, its oldest record is let go, and from then
//! on every token of that principal issued as early or earlier is refused as
//! [`Redemption::Superseded`] (the "floor": a record that old may have been let go, so it can
//! no longer be told whether it was used). A token issued after the flood is unaffected. At most
//! [`MAX_REDEEMING_PRINCIPALS`] principals hold records at once: a new one past it, while every
//! record is still live, is refused as [`Redemption::Crowded`]; the anonymous principal is
//! never counted, nor refused for it. Stores may bound the total further (the memory store at
//! [`MAX_REDEEMED`]).
//!
//! # Clocks
//!
//! Times are the caller's: `issued_at_ms` as sealed by whichever replica issued the token,
//! `now_ms` the redeeming replica's wall clock, both in milliseconds since the UNIX epoch. The
//! caller refuses a token that expired by its own clock before it asks the store, so the store
//! only has to keep each record until then. Replicas sharing a store should keep their clocks
//! close: a replica whose clock runs `d` behind another's sees a token live for `d` after the
//! other let its record go, so a caller that tolerates skew passes a ttl that covers it.

mod memory;

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use crate::idempotency::StoreError;

pub use memory::MemoryRedemptionStore;

/// The records one principal keeps; past it, its oldest is let go and the tokens as old or
/// older are refused ([`Redemption::Superseded`]).
pub const MAX_REDEEMED_PER_PRINCIPAL: usize = 1024;

/// Principals holding records at once; a new one past it is refused
/// ([`Redemption::Crowded`]) until records expire. The anonymous principal is not counted.
pub const MAX_REDEEMING_PRINCIPALS: usize = 4096;

/// Records [`MemoryRedemptionStore`] keeps in all; past it, the principal with the most lets go
/// of its oldest.
pub const MAX_REDEEMED: usize = 64 * 1024;

/// A token to redeem: whose it is, when it was issued and its nonce. Tokens of different
/// principals never meet; one principal's are ordered by `(issued_at_ms, nonce)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedemptionKey {
    principal: Arc<str>,
    issued_at_ms: u64,
    nonce: u64,
}

impl RedemptionKey {
    /// The token of `principal` (`None`: the anonymous principal) issued at `issued_at_ms`
    /// (milliseconds since the UNIX epoch, by the issuing replica's clock) with `nonce`.
    pub fn new(principal: Option<&str>, issued_at_ms: u64, nonce: u64) -> Self {
        Self {
            principal: principal.unwrap_or_default().into(),
            issued_at_ms,
            nonce,
        }
    }

    /// The principal, empty for the anonymous one.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// Whether it is the anonymous principal's.
    pub fn is_anonymous(&self) -> bool {
        self.principal.is_empty()
    }

    /// When it was issued, in milliseconds since the UNIX epoch.
    pub fn issued_at_ms(&self) -> u64 {
        self.issued_at_ms
    }

    /// Its nonce.
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    /// Its place among its principal's tokens: issued first, first.
    pub fn order(&self) -> (u64, u64) {
        (self.issued_at_ms, self.nonce)
    }

    /// When its record may be let go: `issued_at_ms + ttl`, in milliseconds since the epoch.
    pub fn expires_at_ms(&self, ttl: Duration) -> u64 {
        self.issued_at_ms.saturating_add(ttl_ms(ttl))
    }
}

/// A ttl in whole milliseconds, saturating.
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// The answer to [`RedemptionStore::redeem`]. Only `Redeemed` lets the token's call go on; the
/// others ask the client to call again, which issues a fresh token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Redemption {
    /// First use: it is recorded, and the call goes on.
    Redeemed,
    /// It was redeemed before (here or on another replica). The client is told the state was
    /// already used, and to call again.
    AlreadyUsed,
    /// Its principal redeemed so many newer tokens since it was issued that its record might
    /// have been let go. The client is told too many newer confirmations were answered since
    /// it was asked, and to call again.
    Superseded,
    /// The store holds records of as many principals as it may, all still live. The client is
    /// told too many confirmations are pending, and to call again shortly.
    Crowded,
}

impl Redemption {
    /// Whether the token was redeemed now.
    pub fn is_redeemed(self) -> bool {
        self == Self::Redeemed
    }
}

/// Where redeemed tokens are remembered until they expire. The default,
/// [`MemoryRedemptionStore`], is per process; `carmy-store`'s stores share the records between
/// replicas, so a token is used once whichever replica sees it.
///
/// What an implementation promises:
/// - `redeem` is atomic: of any number of concurrent redemptions of one token, on any number
///   of replicas sharing the store, one is `Redeemed` and the others `AlreadyUsed`;
/// - a redeemed token answers `AlreadyUsed` until it expires (`issued_at_ms + ttl <= now_ms`),
///   unless its principal's floor passed it (`Superseded`);
/// - the bounds of the [module](self) hold: at most [`MAX_REDEEMED_PER_PRINCIPAL`] records per
///   principal with the floor, at most [`MAX_REDEEMING_PRINCIPALS`] principals, and a record is
///   never kept long past its expiry;
/// - when it cannot answer, it says so ([`StoreError`]), and the caller refuses the token.
///
/// A store is shared with `Arc`; `Arc<S>` is a store too. `carmy-store`'s
/// `redemption_conformance` suite is this contract as scenarios.
///
/// ```
/// use std::time::Duration;
/// use carmy_core::{MemoryRedemptionStore, Redemption, RedemptionKey, RedemptionStore};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = MemoryRedemptionStore::default();
/// let token = RedemptionKey::new(Some("alice"), 1_000, 7);
/// let ttl = Duration::from_secs(600);
/// assert_eq!(store.redeem(&token, ttl, 2_000).await?, Redemption::Redeemed);
/// assert_eq!(store.redeem(&token, ttl, 3_000).await?, Redemption::AlreadyUsed);
/// # Ok::<(), carmy_core::StoreError>(())
/// # }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a redemption store",
    label = "not a redemption store",
    note = "implement `redeem` of `RedemptionStore` for `{Self}`, or use `MemoryRedemptionStore`"
)]
pub trait RedemptionStore: Send + Sync + 'static {
    /// Redeems `token`, whose record lives until `issued_at_ms + ttl`, at the caller's wall
    /// clock `now_ms` (milliseconds since the UNIX epoch).
    fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> impl Future<Output = Result<Redemption, StoreError>> + Send;
}

impl<S: RedemptionStore> RedemptionStore for Arc<S> {
    fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> impl Future<Output = Result<Redemption, StoreError>> + Send {
        (**self).redeem(token, ttl, now_ms)
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A [`RedemptionStore`] behind a pointer: each call returns a boxed future.
pub(crate) trait DynRedemptionStore: Send + Sync + 'static {
    fn redeem_boxed<'a>(
        &'a self,
        token: &'a RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Redemption, StoreError>>;
}

impl<S: RedemptionStore> DynRedemptionStore for S {
    fn redeem_boxed<'a>(
        &'a self,
        token: &'a RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Redemption, StoreError>> {
        Box::pin(self.redeem(token, ttl, now_ms))
    }
}

/// The runtime's redemption store, whichever it is ([`Runtime::redemptions`]). Cheap to clone.
///
/// [`Runtime::redemptions`]: crate::Runtime::redemptions
#[derive(Clone)]
pub struct Redemptions {
    store: Arc<dyn DynRedemptionStore>,
}

impl Redemptions {
    pub(crate) fn new(store: Arc<dyn DynRedemptionStore>) -> Self {
        Self { store }
    }

    /// Redeems `token`, as [`RedemptionStore::redeem`] does.
    pub async fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<Redemption, StoreError> {
        self.store.redeem_boxed(token, ttl, now_ms).await
    }
}

impl std::fmt::Debug for Redemptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redemptions").finish_non_exhaustive()
    }
}
