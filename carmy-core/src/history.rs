//! Recent executions and their statuses, queryable by id.

use std::{
    borrow::Cow,
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, SystemTime},
};

use crate::execution::{ExecutionId, ExecutionStatus};

/// What is known of one execution.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutionRecord {
    /// Its id.
    pub id: ExecutionId,
    /// The tool called (as sent, for calls to unknown tools).
    pub tool: Cow<'static, str>,
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

#[derive(Default)]
struct Inner {
    records: HashMap<ExecutionId, ExecutionRecord>,
    finished: VecDeque<ExecutionId>,
}

impl History {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn started(&self, record: ExecutionRecord) {
        self.lock().records.insert(record.id.clone(), record);
    }

    pub(crate) fn finished(&self, record: ExecutionRecord) {
        if self.capacity == 0 {
            self.lock().records.remove(&record.id);
            return;
        }
        let mut inner = self.lock();
        let id = record.id.clone();
        inner.records.insert(id.clone(), record);
        inner.finished.push_back(id);
        while inner.finished.len() > self.capacity {
            if let Some(oldest) = inner.finished.pop_front() {
                inner.records.remove(&oldest);
            }
        }
    }

    pub(crate) fn get(&self, id: &ExecutionId) -> Option<ExecutionRecord> {
        self.lock().records.get(id).cloned()
    }

    pub(crate) fn running(&self) -> usize {
        let inner = self.lock();
        inner.records.len() - inner.finished.len()
    }
}
