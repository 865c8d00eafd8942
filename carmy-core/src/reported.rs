//! The changes a tool reports while it runs ([`Context::resource_updated`]), told to watchers
//! once its call succeeded: a transactional tool's after its writes committed, so a subscriber
//! that reads at once sees them; none for a call that failed, or whose commit was retried.
//!
//! [`Context::resource_updated`]: crate::Context::resource_updated

use std::sync::Mutex;

use crate::{resource_change::ResourceChange, sync::lock};

/// The most changes one execution keeps; past it, they are told as one list change.
const MAX_REPORTED: usize = 64;

/// One execution's reported changes, in the order reported, each once.
#[derive(Debug, Default)]
pub(crate) struct Reported {
    changes: Mutex<Vec<ResourceChange>>,
}

impl Reported {
    pub(crate) fn push(&self, change: ResourceChange) {
        let mut changes = lock(&self.changes);
        if changes.contains(&change) {
            return;
        }
        if changes.len() >= MAX_REPORTED {
            // Too many to name: subscribers are told to look again.
            changes.retain(|change| *change == ResourceChange::ListChanged);
            changes.push(ResourceChange::ListChanged);
            changes.dedup();
            return;
        }
        changes.push(change);
    }

    /// Every change reported, in order; forgotten here.
    pub(crate) fn take(&self) -> Vec<ResourceChange> {
        std::mem::take(&mut *lock(&self.changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_is_kept_once_and_a_flood_becomes_a_list_change() {
        let reported = Reported::default();
        reported.push(ResourceChange::Updated("a".to_owned()));
        reported.push(ResourceChange::Updated("a".to_owned()));
        reported.push(ResourceChange::Updated("b".to_owned()));
        assert_eq!(lock(&reported.changes).len(), 2);
        for n in 0..2 * MAX_REPORTED {
            reported.push(ResourceChange::Updated(format!("x{n}")));
        }
        let kept = lock(&reported.changes).clone();
        assert!(kept.len() <= MAX_REPORTED, "{}", kept.len());
        assert!(kept.contains(&ResourceChange::ListChanged));
    }
}
