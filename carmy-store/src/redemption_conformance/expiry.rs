//! Expiry: a record lives until its token's `issued_at_ms + ttl`, by the caller's clock, and
//! is gone after.

use carmy_core::{MAX_REDEEMED_PER_PRINCIPAL, Redemption, RedemptionStore};

use super::{
    opener::RedemptionOpener,
    support::{START, TTL_MS, redeem, token},
};

/// Until `issued_at_ms + ttl` the record holds (`AlreadyUsed`); from then on it is gone, so
/// the store, asked again, redeems it anew (the caller refuses an expired token before it
/// asks: this shows the record was let go, not that the token is good).
pub async fn records_expire_with_their_tokens<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let store = stores.open().await;
    let old = token(Some("alice"), START, 1);
    let newer = token(Some("alice"), START + TTL_MS / 2, 2);
    assert_eq!(redeem(&*store, &old, START).await, Redemption::Redeemed);
    assert_eq!(
        redeem(&*store, &newer, START + TTL_MS / 2).await,
        Redemption::Redeemed
    );
    let last_live = START + TTL_MS - 1;
    assert_eq!(
        redeem(&*store, &old, last_live).await,
        Redemption::AlreadyUsed
    );
    let expired = START + TTL_MS;
    assert_eq!(redeem(&*store, &old, expired).await, Redemption::Redeemed);
    // A newer record of the same principal outlives the older.
    assert_eq!(
        redeem(&*store, &newer, expired).await,
        Redemption::AlreadyUsed
    );
}

/// A principal's floor expires with the record it was: after a flood, once the time of every
/// record is up, the principal's tokens are judged afresh and it holds records again.
pub async fn a_floor_expires_with_its_records<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let store = stores.open().await;
    for n in 0..=MAX_REDEEMED_PER_PRINCIPAL as u64 {
        let flood = token(Some("mallory"), START, n);
        assert_eq!(redeem(&*store, &flood, START).await, Redemption::Redeemed);
    }
    let first = token(Some("mallory"), START, 0);
    assert_eq!(redeem(&*store, &first, START).await, Redemption::Superseded);
    let expired = START + TTL_MS;
    assert_eq!(redeem(&*store, &first, expired).await, Redemption::Redeemed);
    let fresh = token(Some("mallory"), expired, 0);
    assert_eq!(redeem(&*store, &fresh, expired).await, Redemption::Redeemed);
    assert_eq!(
        redeem(&*store, &fresh, expired).await,
        Redemption::AlreadyUsed
    );
}
