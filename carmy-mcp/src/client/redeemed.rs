//! Redeemed request states, remembered per principal until they expire, so that each
//! state is used once and one principal's flood costs only its own older questions.

use std::collections::{BTreeSet, HashMap};

/// A state's name in the redeemed records, in the order states were issued.
pub(super) type StateId = (u64, u64);

/// Reasons a redemption is refused, in terms safe to show a client.
pub(super) const USED: &str = "it was already used; call again";
pub(super) const SUPERSEDED: &str =
    "too many newer confirmations were answered since it was asked; call again";
pub(super) const CROWDED: &str = "too many confirmations are pending; call again shortly";

/// Redeemed states remembered per principal; past it, the oldest record is let go.
pub(super) const MAX_REDEEMED_PER_PRINCIPAL: usize = 1024;
/// Redeemed states remembered in all; past it, the principal with the most loses its oldest.
const MAX_REDEEMED: usize = 64 * 1024;
/// Principals whose redeemed states are remembered at once. A new one past it, while every
/// record is still live, is refused: the bound holds by failing closed, never by forgetting.
const MAX_REDEEMING_PRINCIPALS: usize = 4096;

/// The states already redeemed, per principal, until they expire.
#[derive(Default)]
pub(super) struct Redeemed {
    anonymous: Window,
    principals: HashMap<Box<str>, Window>,
    /// Records in every window.
    pub(super) held: usize,
}

/// One principal's redeemed states.
#[derive(Default)]
struct Window {
    /// Redeemed, oldest first.
    used: BTreeSet<StateId>,
    /// States issued at or before it are refused: a record that old may have been let go.
    floor: Option<StateId>,
}

impl Window {
    /// Lets go of the records of expired states, which are refused on their age alone; returns
    /// how many.
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

    /// Lets go of the oldest record, refusing from now on every state as old.
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
    pub(super) fn redeem(
        &mut self,
        principal: Option<&str>,
        state: StateId,
        now: u64,
        ttl: u64,
    ) -> Result<(), &'static str> {
        let window = match principal {
            None => &mut self.anonymous,
            Some(principal) => {
                if !self.principals.contains_key(principal) {
                    if self.principals.len() >= MAX_REDEEMING_PRINCIPALS {
                        self.sweep(now, ttl);
                        if self.principals.len() >= MAX_REDEEMING_PRINCIPALS {
                            return Err(CROWDED);
                        }
                    }
                    self.principals.insert(principal.into(), Window::default());
                }
                self.principals
                    .get_mut(principal)
                    .expect("the principal's window was just made")
            }
        };
        let pruned = window.prune(now, ttl);
        self.held -= pruned;
        if window.floor.is_some_and(|floor| state <= floor) {
            return Err(SUPERSEDED);
        }
        if !window.used.insert(state) {
            return Err(USED);
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
        Ok(())
    }

    /// Lets go of every expired record, and of the principals left with none.
    pub(super) fn sweep(&mut self, now: u64, ttl: u64) {
        let mut pruned = self.anonymous.prune(now, ttl);
        self.principals.retain(|_, window| {
            pruned += window.prune(now, ttl);
            !window.is_idle()
        });
        self.held -= pruned;
    }

    #[cfg(test)]
    pub(super) fn records(&self, principal: Option<&str>) -> usize {
        match principal {
            None => self.anonymous.used.len(),
            Some(principal) => self.principals.get(principal).map_or(0, |w| w.used.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    redeemed.redeem(Some(&principal), (round, n), round, ttl),
                    Ok(())
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
            assert_eq!(redeemed.redeem(Some(&principal), (0, p), 0, ttl), Ok(()));
        }
        assert_eq!(redeemed.redeem(Some("late"), (1, 0), 1, ttl), Err(CROWDED));
        // Known principals and the anonymous one are not affected.
        assert_eq!(redeemed.redeem(Some("p1"), (1, 1), 1, ttl), Ok(()));
        assert_eq!(redeemed.redeem(None, (1, 2), 1, ttl), Ok(()));
        // Once the old records expire, there is room.
        assert_eq!(
            redeemed.redeem(Some("late"), (2_000, 0), 2_000, ttl),
            Ok(())
        );
    }
}
