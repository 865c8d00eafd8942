//! The runtime's redemption store: in memory unless the builder is given one, shared by every
//! runtime given the same.

use std::{sync::Arc, time::Duration};

use carmy_core::{Carmy, MemoryRedemptionStore, Redemption, RedemptionKey};

const TTL: Duration = Duration::from_secs(600);

#[tokio::test]
async fn a_runtime_redeems_in_memory_by_default() {
    let runtime = Carmy::new().build().unwrap();
    let token = RedemptionKey::new(Some("alice"), 1_000, 1);
    let redemptions = runtime.redemptions();
    assert_eq!(
        redemptions.redeem(&token, TTL, 2_000).await.unwrap(),
        Redemption::Redeemed
    );
    assert_eq!(
        redemptions.redeem(&token, TTL, 2_000).await.unwrap(),
        Redemption::AlreadyUsed
    );
    // Another runtime has a store of its own.
    let other = Carmy::new().build().unwrap();
    assert_eq!(
        other
            .redemptions()
            .redeem(&token, TTL, 2_000)
            .await
            .unwrap(),
        Redemption::Redeemed
    );
}

#[tokio::test]
async fn runtimes_given_one_store_redeem_a_token_once_between_them() {
    let store = Arc::new(MemoryRedemptionStore::default());
    let one = Carmy::new()
        .redemption_store(Arc::clone(&store))
        .build()
        .unwrap();
    let other = Carmy::new()
        .redemption_store(Arc::clone(&store))
        .build()
        .unwrap();
    let token = RedemptionKey::new(None, 1_000, 1);
    assert_eq!(
        one.redemptions().redeem(&token, TTL, 2_000).await.unwrap(),
        Redemption::Redeemed
    );
    assert_eq!(
        other
            .redemptions()
            .redeem(&token, TTL, 2_000)
            .await
            .unwrap(),
        Redemption::AlreadyUsed
    );
    assert_eq!(store.len(), 1);
    // Once expired, the record is let go.
    store.sweep(TTL, 1_000 + 600_000);
    assert!(store.is_empty());
}
