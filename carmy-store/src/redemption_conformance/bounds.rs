//! Bounds: a principal's flood costs only its own older tokens, and principals past their
//! bound wait while every record is live.

use carmy_core::{
    MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, Redemption, RedemptionStore,
};

use super::{
    opener::RedemptionOpener,
    support::{START, TTL_MS, redeem, token},
};

/// Past [`MAX_REDEEMED_PER_PRINCIPAL`] records, a principal's oldest is let go and its tokens
/// as old or older are refused as `Superseded`, redeemed or not; its newer records and tokens,
/// and every other principal's, are untouched.
pub async fn a_flood_supersedes_only_older_tokens<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let store = stores.open().await;
    let now = START + 10;
    let asked_before = token(Some("mallory"), START, 1);
    let redeemed_before = token(Some("mallory"), START + 1, 1);
    let alices = token(Some("alice"), START, 1);
    assert_eq!(
        redeem(&*store, &redeemed_before, now).await,
        Redemption::Redeemed
    );
    // The flood: one token more than the bound, all newer than those above.
    let flood = |n: u64| token(Some("mallory"), START + 2 + n / 100, n);
    for n in 0..MAX_REDEEMED_PER_PRINCIPAL as u64 {
        assert_eq!(
            redeem(&*store, &flood(n), now).await,
            Redemption::Redeemed,
            "{n}"
        );
    }
    assert_eq!(
        redeem(&*store, &asked_before, now).await,
        Redemption::Superseded
    );
    assert_eq!(
        redeem(&*store, &redeemed_before, now).await,
        Redemption::Superseded
    );
    // Every record of the flood is still kept: its tokens are used, none superseded.
    assert_eq!(
        redeem(&*store, &flood(0), now).await,
        Redemption::AlreadyUsed
    );
    let last = MAX_REDEEMED_PER_PRINCIPAL as u64 - 1;
    assert_eq!(
        redeem(&*store, &flood(last), now).await,
        Redemption::AlreadyUsed
    );
    // One more, and the flood's oldest is let go in its turn.
    assert_eq!(
        redeem(&*store, &flood(last + 1), now).await,
        Redemption::Redeemed
    );
    assert_eq!(
        redeem(&*store, &flood(0), now).await,
        Redemption::Superseded
    );
    assert_eq!(
        redeem(&*store, &flood(1), now).await,
        Redemption::AlreadyUsed
    );
    // Other principals are not affected, nor a token asked after the flood.
    assert_eq!(redeem(&*store, &alices, now).await, Redemption::Redeemed);
    let anonymous = token(None, START, 1);
    assert_eq!(redeem(&*store, &anonymous, now).await, Redemption::Redeemed);
    let fresh = token(Some("mallory"), now, 0);
    assert_eq!(redeem(&*store, &fresh, now).await, Redemption::Redeemed);
    assert_eq!(redeem(&*store, &fresh, now).await, Redemption::AlreadyUsed);
}

/// Past [`MAX_REDEEMING_PRINCIPALS`] principals holding live records, a new one is `Crowded`;
/// those holding records, and the anonymous principal, are not. Once the records expire,
/// there is room again.
pub async fn principals_past_the_bound_wait<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let store = stores.open().await;
    for p in 0..MAX_REDEEMING_PRINCIPALS as u64 {
        let theirs = token(Some(&format!("p{p}")), START, p);
        assert_eq!(
            redeem(&*store, &theirs, START).await,
            Redemption::Redeemed,
            "{p}"
        );
    }
    let late = token(Some("late"), START + 1, 0);
    assert_eq!(redeem(&*store, &late, START + 1).await, Redemption::Crowded);
    let known = token(Some("p1"), START + 1, 1);
    assert_eq!(
        redeem(&*store, &known, START + 1).await,
        Redemption::Redeemed
    );
    let anonymous = token(None, START + 1, 2);
    assert_eq!(
        redeem(&*store, &anonymous, START + 1).await,
        Redemption::Redeemed
    );
    // Once the old records expire, there is room.
    let later = START + 1 + TTL_MS;
    let late = token(Some("late"), later, 0);
    assert_eq!(redeem(&*store, &late, later).await, Redemption::Redeemed);
}
