//! Single-use tokens on the server ([`RedemptionStore`]): every replica connected to it
//! redeems a token once between them.
//!
//! A redemption is one script (`lua/redeem.lua`), sent once at most: an answer lost on the way
//! fails the redemption closed ([`StoreError::Unavailable`]) rather than send it again and be
//! told, of the token it just redeemed, that it was used. Per principal, a sorted set of its
//! records (at most [`MAX_REDEEMED_PER_PRINCIPAL`], the oldest let go past it, which raises
//! its floor) and its floor; for all, a sorted set of the principals holding records (at most
//! [`MAX_REDEEMING_PRINCIPALS`], the anonymous one aside), so the server holds at most their
//! product. Every key has a TTL that ends with the newest record it covers, so nothing
//! outlives its records; records expired before that are trimmed when their principal redeems
//! again. The key layout is in `keys`.

use std::time::Duration;

use carmy_core::{
    MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, Redemption, RedemptionKey,
    RedemptionStore, StoreError,
};
use redis::Script;

use super::{
    RedisStore,
    link::{Link, LinkError},
    script_calls::{field, invoke_once, ms, unexpected},
};

const REDEEM: &str = include_str!("lua/redeem.lua");

/// The largest instant sent as a score: what Lua's numbers (and sorted sets' scores) hold
/// exactly. Tokens of later instants still sort right, by their members.
const LARGEST_SCORE: u64 = (1 << 53) - 1;

/// The redemption script.
pub(super) struct RedeemScript(Script);

impl RedeemScript {
    pub(super) fn new() -> Self {
        Self(Script::new(REDEEM))
    }

    /// Loads the script into the server's cache.
    pub(super) async fn load(&self, link: &Link) -> Result<(), LinkError> {
        link.run("script load", |mut connection, _| async move {
            self.0.load_async(&mut connection).await
        })
        .await?;
        Ok(())
    }
}

impl RedemptionStore for RedisStore {
    async fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<Redemption, StoreError> {
        let names = self.keys.redemption(token.principal());
        let member = format!("{:016x}{:016x}", token.issued_at_ms(), token.nonce());
        let score = token.issued_at_ms().min(LARGEST_SCORE);
        let now = now_ms.min(LARGEST_SCORE);
        let expires = token.expires_at_ms(ttl).min(LARGEST_SCORE);
        let principal = if token.is_anonymous() {
            ""
        } else {
            names.member.as_str()
        };
        let reply = invoke_once(&self.link, "redeem", |_| {
            let mut invocation = self.redeem_script.0.prepare_invoke();
            invocation
                .key(&names.redeemed)
                .key(&names.floor)
                .key(&names.redeemers)
                .arg(&member)
                .arg(score)
                .arg(now)
                .arg(ms(ttl))
                .arg(expires)
                .arg(MAX_REDEEMED_PER_PRINCIPAL)
                .arg(MAX_REDEEMING_PRINCIPALS)
                .arg(principal);
            invocation
        })
        .await?;
        match field("redeem", &reply, 0)? {
            "redeemed" => Ok(Redemption::Redeemed),
            "used" => Ok(Redemption::AlreadyUsed),
            "superseded" => Ok(Redemption::Superseded),
            "crowded" => Ok(Redemption::Crowded),
            _ => Err(unexpected("redeem", &reply)),
        }
    }
}
