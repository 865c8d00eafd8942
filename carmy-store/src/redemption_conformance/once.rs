//! Once: a token is redeemed by its first redemption only, its principal's alone, whichever
//! replica sees it.

use std::sync::Arc;

use carmy_core::{Redemption, RedemptionStore};

use super::{
    opener::RedemptionOpener,
    support::{START, redeem, token},
};

/// The first redemption of a token is `Redeemed`, every later one `AlreadyUsed`; another
/// token of the same instant, or of the same nonce, is a token of its own.
pub async fn redeemed_once<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let store = stores.open().await;
    let first = token(Some("alice"), START, 7);
    assert_eq!(redeem(&*store, &first, START).await, Redemption::Redeemed);
    assert_eq!(
        redeem(&*store, &first, START).await,
        Redemption::AlreadyUsed
    );
    assert_eq!(
        redeem(&*store, &first, START + 1_000).await,
        Redemption::AlreadyUsed
    );
    let same_instant = token(Some("alice"), START, 8);
    assert_eq!(
        redeem(&*store, &same_instant, START).await,
        Redemption::Redeemed
    );
    let same_nonce = token(Some("alice"), START + 1, 7);
    assert_eq!(
        redeem(&*store, &same_nonce, START + 1).await,
        Redemption::Redeemed
    );
    // Extreme values are tokens like any other.
    for (at, nonce) in [
        (START, 0),
        (START, u64::MAX),
        (START, 1 << 63),
        (u64::MAX, 5),
    ] {
        let odd = token(None, at, nonce);
        assert_eq!(redeem(&*store, &odd, START).await, Redemption::Redeemed);
        assert_eq!(redeem(&*store, &odd, START).await, Redemption::AlreadyUsed);
    }
}

/// The same token of different principals (the anonymous one among them) is redeemed once
/// for each: their records never meet.
pub async fn principals_never_meet<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let store = stores.open().await;
    let principals = [Some("alice"), Some("bob"), None, Some(""), Some("a}b{c")];
    for principal in [Some("alice"), Some("bob"), None, Some("a}b{c")] {
        let mine = token(principal, START, 1);
        assert_eq!(
            redeem(&*store, &mine, START).await,
            Redemption::Redeemed,
            "{principal:?}"
        );
    }
    // `Some("")` is the anonymous principal, as for idempotency keys.
    for principal in principals {
        let mine = token(principal, START, 1);
        assert_eq!(
            redeem(&*store, &mine, START).await,
            Redemption::AlreadyUsed,
            "{principal:?}"
        );
    }
}

/// Two stores on the same records, as two replicas on one database: a token redeemed on one
/// is used on the other, and of concurrent redemptions on both, one is `Redeemed`.
pub async fn replicas_redeem_once<S: RedemptionStore>(stores: RedemptionOpener<S>) {
    let (one, other) = stores.open_replicas().await;
    let first = token(Some("alice"), START, 1);
    assert_eq!(redeem(&*one, &first, START).await, Redemption::Redeemed);
    assert_eq!(
        redeem(&*other, &first, START).await,
        Redemption::AlreadyUsed
    );
    let second = token(Some("alice"), START, 2);
    assert_eq!(redeem(&*other, &second, START).await, Redemption::Redeemed);
    assert_eq!(redeem(&*one, &second, START).await, Redemption::AlreadyUsed);

    for nonce in 10..20 {
        let raced = token(Some("bob"), START, nonce);
        let attempts: Vec<_> = (0..8)
            .map(|n| {
                let store = Arc::clone(if n % 2 == 0 { &one } else { &other });
                let raced = raced.clone();
                tokio::spawn(async move { redeem(&*store, &raced, START).await })
            })
            .collect();
        let mut answers = Vec::new();
        for attempt in attempts {
            answers.push(attempt.await.expect("a redemption panicked"));
        }
        let redeemed = answers.iter().filter(|a| a.is_redeemed()).count();
        assert_eq!(redeemed, 1, "{answers:?}");
        assert!(
            answers
                .iter()
                .all(|a| matches!(a, Redemption::Redeemed | Redemption::AlreadyUsed)),
            "{answers:?}"
        );
    }
}
