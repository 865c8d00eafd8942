//! Progress reports from a running tool, sent to the client as `notifications/progress`.

use std::{
    future::Future,
    sync::{Arc, Mutex},
};

use carmy_core::{ProgressReporter, ProgressSink};
use rmcp::{
    Peer, RoleServer,
    model::{ProgressNotificationParam, ProgressToken},
};
use tokio::sync::mpsc;

use crate::sync::lock;

/// Turns reports into notifications for one request's progress token.
///
/// `report` is synchronous and the peer is async, so reports go through a channel that
/// [`with_progress`] drains in order, inside the request's own task (rmcp ties notifications to
/// their request through a task-local, which a spawned task would lose).
struct PeerProgress {
    token: ProgressToken,
    /// `None` once the call has finished: no notification may follow the response.
    queue: Mutex<Option<mpsc::UnboundedSender<ProgressNotificationParam>>>,
}

impl ProgressSink for PeerProgress {
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let queue = lock(&self.queue);
        let Some(queue) = queue.as_ref() else { return };
        let mut notification = ProgressNotificationParam::new(self.token.clone(), done);
        if let Some(total) = total {
            notification = notification.with_total(total);
        }
        if let Some(message) = message {
            notification = notification.with_message(message);
        }
        let _ = queue.send(notification);
    }
}

impl PeerProgress {
    fn close(&self) {
        lock(&self.queue).take();
    }
}

/// Runs `call` with a reporter whose reports reach `peer` as progress notifications for `token`,
/// and returns once every report made during the call has been sent, so that none trails the
/// response. Reports made after `call` finished (by a task the tool left behind) are dropped.
pub(crate) async fn with_progress<F, Fut>(
    peer: &Peer<RoleServer>,
    token: ProgressToken,
    call: F,
) -> Fut::Output
where
    F: FnOnce(ProgressReporter) -> Fut,
    Fut: Future,
{
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let sink = Arc::new(PeerProgress {
        token,
        queue: Mutex::new(Some(sender)),
    });
    let reporter = ProgressReporter::new(Arc::clone(&sink) as Arc<dyn ProgressSink>);
    let run = async {
        let output = call(reporter).await;
        sink.close();
        output
    };
    let forward = async {
        while let Some(notification) = receiver.recv().await {
            if let Err(error) = peer.notify_progress(notification).await {
                tracing::debug!(%error, "cannot send a progress notification");
                break;
            }
        }
    };
    let (output, ()) = tokio::join!(run, forward);
    output
}
