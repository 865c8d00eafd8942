//! [`MemoryRedemptionStore`]: redeemed tokens remembered per principal in this process's
//! memory, until they expire, so that one principal's flood costs only its own older tokens.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Mutex,
    time::Duration,
};

use super::{
    MAX_REDEEMED, MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, Redemption, RedemptionKey,
    RedemptionStore, ttl_ms,
};
use crate::{idempotency::StoreError, sync::lock};

/// The default [`RedemptionStore`]: in memory, per process. Bounded as the
/// [module](super) says, and in all at [`MAX_REDEEMED`] records: past it, the principal with
/// the most records lets go of its oldest (with the bounds above, it holds at least
/// `MAX_REDEEMED / MAX_REDEEMING_PRINCIPALS`). Replicas each with their own would each accept
/// a token once: share a `carmy-store` store between them instead.
#[derive(Default)]
pub struct MemoryRedemptionStore {
    redeemed: Mutex<Redeemed>,
}

impl MemoryRedemptionStore {
    /// Lets go of every record expired at `now_ms` under `ttl`, and of the principals left
    /// with none. A redemption does it too when a bound is reached.
    pub fn sweep(&self, ttl: Duration, now_ms: u64) {
        lock(&self.redeemed).sweep(now_ms, ttl_ms(ttl));
    }

    /// The records kept now, of every principal.
    pub fn len(&self) -> usize {
        lock(&self.redeemed).held
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for MemoryRedemptionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRedemptionStore")
            .field("records", &self.len())
            .finish()
    }
}

impl RedemptionStore for MemoryRedemptionStore {
    async fn redeem(
        &self,
        token: &RedemptionKey,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<Redemption, StoreError> {
        Ok(lock(&self.redeemed).redeem(token, now_ms, ttl_ms(ttl)))
    }
}

/// A token's place among its principal's: `(issued_at_ms, nonce)`.
type Order = (u64, u64);

/// The tokens already redeemed, per principal, until they expire.
#[derive(Default)]
struct Redeemed {
    anonymous: Window,
    principals: HashMap<Box<str>, Window>,
    /// Records in every window.
    held: usize,
}

/// One principal's redeemed tokens.
#[derive(Default)]
struct Window {
    /// Redeemed, oldest first.
    used: BTreeSet<Order>,
    /// Tokens issued at or before it are refused: a record that old may have been let go.
    floor: Option<Order>,
}

impl Window {
    /// Lets go of the records of expired tokens, which the caller refuses on their age alone;
    /// returns how many.
    fn prune(&mut self, now: u64, ttl: u64) -> usize {
        let mut pruned = 0;
        while let Some(&(at, _)) = self.used.first()
            && at.saturating_add(ttl) <= now
        {
            self.used.pop_first();
            pruned += 1;
        }
        if self
            .floor
            .is_some_and(|(at, _)| at.saturating_add(ttl) <= now)
        {
            self.floor = None;
        }
        pruned
    }

    /// Lets go of the oldest record, refusing from now on every token as old.
    fn let_go_oldest(&mut self) -> bool {
        match self.used.pop_first() {
            Some(oldest) => {
                // The oldest record is newer than the floor, so the floor only moves forward.
                self.floor = Some(oldest);
                true
            }
            None => false,
        }
    }

    fn is_idle(&self) -> bool {
        self.used.is_empty() && self.floor.is_none()
    }
}

impl Redeemed {
    fn redeem(&mut self, token: &RedemptionKey, now: u64, ttl: u64) -> Redemption {
        let window = if token.is_anonymous() {
            &mut self.anonymous
        } else {
            let principal = token.principal();
            if !self.principals.contains_key(principal) {
                if self.principals.len() >= MAX_REDEEMING_PRINCIPALS {
                    self.sweep(now, ttl);
                    if self.principals.len() >= MAX_REDEEMING_PRINCIPALS {
                        return Redemption::Crowded;
                    }
                }
                self.principals.insert(principal.into(), Window::default());
            }
            self.principals
                .get_mut(principal)
                .expect("the principal's window was just made")
        };
        let pruned = window.prune(now, ttl);
        self.held -= pruned;
        let order = token.order();
        if window.floor.is_some_and(|floor| order <= floor) {
            return Redemption::Superseded;
        }
        if !window.used.insert(order) {
            return Redemption::AlreadyUsed;
        }
        self.held += 1;
        if window.used.len() > MAX_REDEEMED_PER_PRINCIPAL && window.let_go_oldest() {
            self.held -= 1;
        }
        while self.held > MAX_REDEEMED {
            self.sweep(now, ttl);
            if self.held <= MAX_REDEEMED {
                break;
            }
            // The principal with the most records pays: with the bounds above, it holds at
            // least `MAX_REDEEMED / MAX_REDEEMING_PRINCIPALS` of them.
            let fullest = self
                .principals
                .values_mut()
                .chain(std::iter::once(&mut self.anonymous))
                .max_by_key(|window| window.used.len());
            match fullest {
                Some(window) if !window.used.is_empty() => {
                    window.let_go_oldest();
                    self.held -= 1;
                }
                _ => break,
            }
        }
        Redemption::Redeemed
    }

    /// Lets go of every expired record, and of the principals left with none.
    fn sweep(&mut self, now: u64, ttl: u64) {
        let mut pruned = self.anonymous.prune(now, ttl);
        self.principals.retain(|_, window| {
            pruned += window.prune(now, ttl);
            !window.is_idle()
        });
        self.held -= pruned;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(principal: Option<&str>, at: u64, nonce: u64) -> RedemptionKey {
        RedemptionKey::new(principal, at, nonce)
    }

    #[test]
    fn the_records_are_bounded_in_all_and_expire() {
        let mut redeemed = Redeemed::default();
        let ttl = 1_000;
        // Many principals, each under its own bound: the total holds, the fullest pays.
        let principals = MAX_REDEEMED / MAX_REDEEMED_PER_PRINCIPAL + 8;
        let mut n = 0;
        for round in 0..MAX_REDEEMED_PER_PRINCIPAL as u64 {
            for p in 0..principals {
                n += 1;
                let principal = format!("p{p}");
                assert_eq!(
                    redeemed.redeem(&token(Some(&principal), round, n), round, ttl),
                    Redemption::Redeemed
                );
            }
        }
        assert!(redeemed.held <= MAX_REDEEMED, "{}", redeemed.held);
        let counted: usize = redeemed.principals.values().map(|w| w.used.len()).sum();
        assert_eq!(counted, redeemed.held);
        // Once expired, the records are let go with their principals.
        redeemed.sweep(10 * ttl, ttl);
        assert_eq!(redeemed.held, 0);
        assert!(redeemed.principals.is_empty());
    }

    #[test]
    fn new_principals_past_the_bound_are_refused_while_records_live() {
        let mut redeemed = Redeemed::default();
        let ttl = 1_000;
        for p in 0..MAX_REDEEMING_PRINCIPALS as u64 {
            let principal = format!("p{p}");
            assert_eq!(
                redeemed.redeem(&token(Some(&principal), 0, p), 0, ttl),
                Redemption::Redeemed
            );
        }
        assert_eq!(
            redeemed.redeem(&token(Some("late"), 1, 0), 1, ttl),
            Redemption::Crowded
        );
        // Known principals and the anonymous one are not affected.
        assert_eq!(
            redeemed.redeem(&token(Some("p1"), 1, 1), 1, ttl),
            Redemption::Redeemed
        );
        assert_eq!(
            redeemed.redeem(&token(None, 1, 2), 1, ttl),
            Redemption::Redeemed
        );
        // Once the old records expire, there is room.
        assert_eq!(
            redeemed.redeem(&token(Some("late"), 2_000, 0), 2_000, ttl),
            Redemption::Redeemed
        );
    }

    #[test]
    fn a_flood_supersedes_only_the_flooders_older_tokens() {
        let mut redeemed = Redeemed::default();
        let ttl = 1_000;
        let old = token(Some("mallory"), 1, 0);
        let alices = token(Some("alice"), 1, 1);
        for n in 0..=MAX_REDEEMED_PER_PRINCIPAL as u64 {
            let flood = token(Some("mallory"), 2, n);
            assert_eq!(redeemed.redeem(&flood, 3, ttl), Redemption::Redeemed);
        }
        assert_eq!(
            redeemed.principals["mallory"].used.len(),
            MAX_REDEEMED_PER_PRINCIPAL
        );
        assert_eq!(redeemed.redeem(&old, 3, ttl), Redemption::Superseded);
        assert_eq!(redeemed.redeem(&alices, 3, ttl), Redemption::Redeemed);
        let fresh = token(Some("mallory"), 3, 0);
        assert_eq!(redeemed.redeem(&fresh, 3, ttl), Redemption::Redeemed);
        assert_eq!(redeemed.redeem(&fresh, 3, ttl), Redemption::AlreadyUsed);
    }
}
