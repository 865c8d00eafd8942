//! Recent executions and their statuses, queryable by id.

use std::{
    borrow::Cow,
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, SystemTime},
};

use crate::{
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    sync::lock,
};

/// What is known of one execution.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExecutionRecord {
    /// Its id.
    pub id: ExecutionId,
    /// What it ran.
    pub kind: ExecutionKind,
    /// The tool called or the resource read, by name (the name or URI as sent, cut short,
    /// when it named nothing).
    pub target: Cow<'static, str>,
    /// Where it stands.
    pub status: ExecutionStatus,
    /// When the runtime received the call.
    pub started_at: SystemTime,
    /// How long it took, once finished.
    pub duration: Option<Duration>,
    /// The error code, if it failed or was refused.
    pub error_code: Option<String>,
}

/// Running executions plus the last `capacity` finished ones.
pub(crate) struct History {
    capacity: usize,
    inner: Mutex<Inner>,
}

/// Finished records sit in arrival order in one ring, found through a small index, rather than
/// in a map of whole records: with records going in and out all the time, a hash table keeps
/// several times `capacity` slots (left by removals), and at ~120 bytes a record that was most
/// of the server's heap. Index slots are 24 bytes.
#[derive(Default)]
struct Inner {
    running: HashMap<ExecutionId, ExecutionRecord>,
    /// The last `capacity` finished records, oldest first.
    finished: VecDeque<ExecutionRecord>,
    /// Where each finished record is: its position counted from the first record ever kept.
    positions: HashMap<ExecutionId, u64>,
    /// How many finished records have been dropped from the front (the position of `finished[0]`).
    dropped: u64,
}

impl History {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Marks an execution running until the returned entry is finished; an entry dropped
    /// unfinished (the caller went away mid-run) is recorded as cancelled.
    pub(crate) fn start(
        &self,
        id: ExecutionId,
        kind: ExecutionKind,
        target: &'static str,
        started_at: SystemTime,
    ) -> Running<'_> {
        let record = ExecutionRecord {
            id: id.clone(),
            kind,
            target: Cow::Borrowed(target),
            status: ExecutionStatus::Running,
            started_at,
            duration: None,
            error_code: None,
        };
        lock(&self.inner).running.insert(id.clone(), record);
        Running {
            history: self,
            id: Some(id),
        }
    }

    pub(crate) fn finished(&self, record: ExecutionRecord) {
        let mut inner = lock(&self.inner);
        inner.running.remove(&record.id);
        if self.capacity == 0 {
            return;
        }
        if inner.finished.len() == self.capacity {
            inner.drop_oldest();
        }
        let position = inner.dropped + inner.finished.len() as u64;
        inner.positions.insert(record.id.clone(), position);
        inner.finished.push_back(record);
    }

    pub(crate) fn get(&self, id: &ExecutionId) -> Option<ExecutionRecord> {
        let inner = lock(&self.inner);
        if let Some(record) = inner.running.get(id) {
            return Some(record.clone());
        }
        let position = *inner.positions.get(id)?;
        let index = usize::try_from(position - inner.dropped).ok()?;
        inner.finished.get(index).cloned()
    }

    pub(crate) fn running(&self) -> usize {
        lock(&self.inner).running.len()
    }
}

/// A running execution's entry in the history.
pub(crate) struct Running<'h> {
    history: &'h History,
    /// `None` once finished.
    id: Option<ExecutionId>,
}

impl Running<'_> {
    /// Records how the execution ended.
    pub(crate) fn finish(mut self, record: ExecutionRecord) {
        self.id = None;
        self.history.finished(record);
    }

    /// Forgets the execution unrecorded: its run was set aside, nothing of it was applied, and
    /// another execution answers the call.
    pub(crate) fn discard(mut self) {
        if let Some(id) = self.id.take() {
            lock(&self.history.inner).running.remove(&id);
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let running = lock(&self.history.inner).running.remove(&id);
        if let Some(mut record) = running {
            record.status = ExecutionStatus::Cancelled;
            record.duration = record.started_at.elapsed().ok();
            record.error_code = Some(crate::error::codes::CANCELLED.to_owned());
            self.history.finished(record);
        }
    }
}

impl Inner {
    fn drop_oldest(&mut self) {
        let Some(oldest) = self.finished.pop_front() else {
            return;
        };
        // The index may point at a later record of the same id; that one stays findable.
        if self.positions.get(&oldest.id) == Some(&self.dropped) {
            self.positions.remove(&oldest.id);
        }
        self.dropped += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, status: ExecutionStatus) -> ExecutionRecord {
        ExecutionRecord {
            id: ExecutionId::from(id),
            kind: ExecutionKind::Tool,
            target: Cow::Borrowed("tool"),
            status,
            started_at: SystemTime::UNIX_EPOCH,
            duration: None,
            error_code: None,
        }
    }

    fn status(history: &History, id: &str) -> Option<ExecutionStatus> {
        history
            .get(&ExecutionId::from(id))
            .map(|record| record.status)
    }

    #[test]
    fn a_record_is_found_while_running_and_once_finished() {
        let history = History::new(4);
        let running = history.start(
            ExecutionId::from("a"),
            ExecutionKind::Tool,
            "tool",
            SystemTime::UNIX_EPOCH,
        );
        assert_eq!(status(&history, "a"), Some(ExecutionStatus::Running));
        assert_eq!(history.running(), 1);
        running.finish(record("a", ExecutionStatus::Succeeded));
        assert_eq!(status(&history, "a"), Some(ExecutionStatus::Succeeded));
        assert_eq!(history.running(), 0);
        assert_eq!(status(&history, "b"), None);
    }

    #[test]
    fn only_the_last_capacity_finished_records_are_kept() {
        let history = History::new(3);
        for index in 0..10 {
            history.finished(record(&index.to_string(), ExecutionStatus::Failed));
        }
        let kept: Vec<_> = (0..10)
            .filter(|index| status(&history, &index.to_string()).is_some())
            .collect();
        assert_eq!(kept, [7, 8, 9]);
        let inner = lock(&history.inner);
        assert_eq!((inner.finished.len(), inner.positions.len()), (3, 3));
    }

    #[test]
    fn running_records_are_kept_whatever_the_capacity() {
        let history = History::new(0);
        let long = history.start(
            ExecutionId::from("long"),
            ExecutionKind::Tool,
            "tool",
            SystemTime::UNIX_EPOCH,
        );
        history.finished(record("quick", ExecutionStatus::Succeeded));
        assert_eq!(status(&history, "long"), Some(ExecutionStatus::Running));
        assert_eq!(status(&history, "quick"), None);
        long.finish(record("long", ExecutionStatus::Cancelled));
        assert_eq!(status(&history, "long"), None);
        assert_eq!(history.running(), 0);
    }

    #[test]
    fn an_entry_dropped_while_running_is_recorded_as_cancelled() {
        let history = History::new(4);
        drop(history.start(
            ExecutionId::from("gone"),
            ExecutionKind::Tool,
            "tool",
            SystemTime::now(),
        ));
        assert_eq!(history.running(), 0);
        let record = history.get(&ExecutionId::from("gone")).unwrap();
        assert_eq!(record.status, ExecutionStatus::Cancelled);
        assert_eq!(record.error_code.as_deref(), Some("CANCELLED"));
        assert!(record.duration.is_some());
    }

    #[test]
    fn a_repeated_id_finds_its_latest_record_until_that_one_goes() {
        let history = History::new(2);
        history.finished(record("same", ExecutionStatus::Failed));
        history.finished(record("same", ExecutionStatus::Succeeded));
        assert_eq!(status(&history, "same"), Some(ExecutionStatus::Succeeded));
        // Dropping the older one keeps the newer one findable.
        history.finished(record("other", ExecutionStatus::Succeeded));
        assert_eq!(status(&history, "same"), Some(ExecutionStatus::Succeeded));
        history.finished(record("last", ExecutionStatus::Succeeded));
        assert_eq!(status(&history, "same"), None);
        assert_eq!(status(&history, "other"), Some(ExecutionStatus::Succeeded));
    }
}
