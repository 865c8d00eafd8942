//! `subscribe`: each update of a resource, one line each, until Ctrl-C.
//!
//! 2025-11-25 subscribes with `resources/subscribe` and the updates arrive as notifications on
//! the session; 2026-07-28 has no sessions, so the updates come on a `subscriptions/listen`
//! stream opened for this resource. Both print the same lines.

use rmcp::model::{ServerNotification, SubscribeRequestParams, SubscriptionFilter};
use serde_json::json;

use super::Run;
use crate::{
    args::Subscribe,
    exit::{Failure, Outcome},
    out::{Printed, print},
};

pub(super) async fn subscribe(run: &mut Run, args: &Subscribe) -> Outcome {
    let interrupt = run.interrupt.clone();
    if run.legacy() {
        #[allow(deprecated)]
        let subscribed = run
            .session
            .peer()
            .subscribe(SubscribeRequestParams::new(args.uri.clone()));
        run.send("resources/subscribe", subscribed).await?;
        run.stderr.line(&format!(
            "subscribed to {}; Ctrl-C to stop",
            crate::escape::field(&args.uri)
        ));
        loop {
            let uri = tokio::select! {
                uri = run.updates.recv() => uri,
                _ = interrupt.wait() => return Err(Failure::Interrupted),
            };
            let Some(uri) = uri else {
                return Err(Failure::Connect(
                    "the connection to the server was lost".into(),
                ));
            };
            if show(run.json, &uri)? == Printed::ReaderGone {
                return Ok(());
            }
        }
    }
    let filter = SubscriptionFilter::builder()
        .resource_subscriptions([args.uri.clone()])
        .build();
    let mut subscription = run
        .send("subscriptions/listen", run.session.peer().listen(filter))
        .await?;
    run.stderr.line(&format!(
        "subscribed to {}; Ctrl-C to stop",
        crate::escape::field(&args.uri)
    ));
    loop {
        let next = tokio::select! {
            next = subscription.next() => next.map_err(Failure::from_service)?,
            _ = interrupt.wait() => {
                let _ = subscription.cancel().await;
                return Err(Failure::Interrupted);
            }
        };
        match next {
            Some(ServerNotification::ResourceUpdatedNotification(updated)) => {
                if show(run.json, &updated.params.uri)? == Printed::ReaderGone {
                    let _ = subscription.cancel().await;
                    return Ok(());
                }
            }
            Some(_) => {}
            None => {
                return Err(Failure::Connect(
                    "the server ended the subscription".to_owned(),
                ));
            }
        }
    }
}

/// One update: `updated URI` on one line, or a JSON line with `--json`.
fn show(json: bool, uri: &str) -> Result<Printed, Failure> {
    if json {
        print(&crate::out::compact(
            &json!({ "method": "notifications/resources/updated", "params": { "uri": uri } }),
        ))
    } else {
        print(&format!("updated {}", crate::escape::field(uri)))
    }
}
