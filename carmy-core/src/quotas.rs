//! [`Quotas`]: how much a store keeps of one kind (request ids, or tasks), per principal and in
//! all, by count and bytes. Every store holds its request ids and its tasks to one each, with
//! defaults of its own. Ground level: it knows nothing of the stores that read it.

/// How much a store keeps of one kind, request ids or tasks: how many and how many bytes one
/// principal may hold, how many and how many bytes all may hold, and the largest outcome kept.
///
/// The bounds are shares, never an eviction policy: a principal past its own is refused new
/// ones (`CAPACITY`, retryable) until its oldest are forgotten, and nobody else notices; past
/// the totals everyone is refused the same way. An outcome over `max_outcome_bytes` (or that
/// does not fit in its principal's share) is kept as a note that the call ran: a retry gets
/// `OUTCOME_NOT_KEPT` instead of running it again.
///
/// Each store gives its own defaults (see its options), changed one bound at a time:
///
/// ```
/// use carmy_core::{MemoryStore, MemoryStoreLimits};
///
/// let store = MemoryStore::new(
///     MemoryStoreLimits::default().with_request_ids(|quotas| quotas.with_max_per_principal(100)),
/// );
/// # drop(store);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quotas {
    /// How many one principal may hold at once.
    pub max_per_principal: usize,
    /// Bytes what one principal holds may take, as the store counts them (names, bookkeeping
    /// and outcomes).
    pub max_bytes_per_principal: usize,
    /// How many all principals together may hold at once.
    pub max: usize,
    /// Bytes what all principals hold may take.
    pub max_bytes: usize,
    /// The largest outcome kept, in bytes; a larger one is kept as a note that the call ran.
    pub max_outcome_bytes: usize,
}

impl Quotas {
    /// Quotas of `max_per_principal` and `max_bytes_per_principal` for each principal,
    /// `max` and `max_bytes` in all, and outcomes of at most `max_outcome_bytes`.
    #[must_use]
    pub const fn new(
        max_per_principal: usize,
        max_bytes_per_principal: usize,
        max: usize,
        max_bytes: usize,
        max_outcome_bytes: usize,
    ) -> Self {
        Self {
            max_per_principal,
            max_bytes_per_principal,
            max,
            max_bytes,
            max_outcome_bytes,
        }
    }

    /// Replaces how many one principal may hold.
    #[must_use]
    pub const fn with_max_per_principal(mut self, max: usize) -> Self {
        self.max_per_principal = max;
        self
    }

    /// Replaces the bytes what one principal holds may take.
    #[must_use]
    pub const fn with_max_bytes_per_principal(mut self, max_bytes: usize) -> Self {
        self.max_bytes_per_principal = max_bytes;
        self
    }

    /// Replaces how many all principals together may hold.
    #[must_use]
    pub const fn with_max(mut self, max: usize) -> Self {
        self.max = max;
        self
    }

    /// Replaces the bytes what all principals hold may take.
    #[must_use]
    pub const fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Replaces the largest outcome kept.
    #[must_use]
    pub const fn with_max_outcome_bytes(mut self, max_bytes: usize) -> Self {
        self.max_outcome_bytes = max_bytes;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::Quotas;

    #[test]
    fn each_setter_replaces_its_own_bound() {
        let quotas = Quotas::new(1, 2, 3, 4, 5);
        assert_eq!(
            (
                quotas.max_per_principal,
                quotas.max_bytes_per_principal,
                quotas.max,
                quotas.max_bytes,
                quotas.max_outcome_bytes
            ),
            (1, 2, 3, 4, 5)
        );
        let changed = quotas
            .with_max_per_principal(10)
            .with_max_bytes_per_principal(20)
            .with_max(30)
            .with_max_bytes(40)
            .with_max_outcome_bytes(50);
        assert_eq!(changed, Quotas::new(10, 20, 30, 40, 50));
    }
}
