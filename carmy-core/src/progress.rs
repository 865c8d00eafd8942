//! Progress reports from long tools, forwarded to whoever asked for them.

use std::{
    fmt,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::sync::lock;

/// Receives progress reports for one execution. Adapters implement it (the MCP adapter turns
/// reports into `notifications/progress`); the runtime throttles before calling it.
pub trait ProgressSink: Send + Sync + 'static {
    /// One report: `done` of `total`, if known, with an optional message.
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>);
}

/// The minimum gap between two forwarded reports; the final report (`done == total`) always
/// goes through so a client never sees a bar stuck short of the end.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// A throttled handle on an optional sink; cheap to clone, free when nobody listens.
#[derive(Clone, Default)]
pub struct ProgressReporter {
    inner: Option<Arc<Throttled>>,
}

struct Throttled {
    sink: Arc<dyn ProgressSink>,
    last: Mutex<Option<(Instant, f64)>>,
}

impl ProgressReporter {
    /// Forwards reports to `sink`, at most one per [`PROGRESS_INTERVAL`].
    pub fn new(sink: Arc<dyn ProgressSink>) -> Self {
        Self {
            inner: Some(Arc::new(Throttled {
                sink,
                last: Mutex::new(None),
            })),
        }
    }

    /// A reporter that drops every report.
    pub fn disabled() -> Self {
        Self::default()
    }

    pub(crate) fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let Some(inner) = &self.inner else { return };
        let now = Instant::now();
        let is_final = total.is_some_and(|total| done >= total);
        {
            let mut last = lock(&inner.last);
            if let Some((at, previous)) = *last {
                // Progress must increase; a stale or repeated value is dropped.
                if done <= previous || (!is_final && now.duration_since(at) < PROGRESS_INTERVAL) {
                    return;
                }
            }
            *last = Some((now, done));
        }
        inner.sink.report(done, total, message);
    }
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReporter")
            .field("enabled", &self.inner.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<f64>>);
    impl ProgressSink for Recorder {
        fn report(&self, done: f64, _total: Option<f64>, _message: Option<&str>) {
            self.0.lock().unwrap().push(done);
        }
    }

    #[test]
    fn throttles_but_always_delivers_the_final_report() {
        let recorder = Arc::new(Recorder::default());
        let reporter = ProgressReporter::new(recorder.clone());
        for done in 1..=100 {
            reporter.report(f64::from(done), Some(100.0), None);
        }
        let seen = recorder.0.lock().unwrap().clone();
        assert_eq!(seen.first(), Some(&1.0));
        assert_eq!(seen.last(), Some(&100.0));
        assert!(seen.len() < 10, "{seen:?}");
    }

    #[test]
    fn disabled_reporter_is_silent() {
        ProgressReporter::disabled().report(1.0, None, Some("x"));
    }
}
