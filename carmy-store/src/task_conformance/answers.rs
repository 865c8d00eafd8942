//! Answers to a task's questions: delivered to its holder, the first one standing, one question
//! at a time.

use std::collections::BTreeMap;

use carmy_core::{Asks, TaskStatus, TaskStore};
use serde_json::json;
use tokio::time::timeout;

use super::{
    opener::TaskOpener,
    support::{LONG, NOTICE, accept, create, form, found, key, succeeded, within},
};

/// Answers to waiting questions wake the holder and are in its renewals; keys that name nothing
/// waiting (unknown, answered already) are ignored and named; the first answer stands.
pub async fn answers_reach_the_holder<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_answers");
    let lease = create(&*store, &key, LONG, LONG).await;
    within(
        "asking",
        store.ask(&lease, Asks::new().with("confirm.1", form("Sure?"))),
    )
    .await;
    let changed = store.changed(&lease);
    let responded = within(
        "answering",
        store.respond(
            &key,
            BTreeMap::from([
                ("confirm.1".to_owned(), accept()),
                ("nope".to_owned(), json!(1)),
            ]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(responded.accepted, ["confirm.1"]);
    assert_eq!(responded.ignored, ["nope"]);
    timeout(NOTICE, changed)
        .await
        .expect("the holder was not told of the answers");
    let signals = within("renewing", store.renew(&lease, LONG, None)).await;
    assert_eq!(
        signals.answers,
        BTreeMap::from([("confirm.1".to_owned(), accept())])
    );
    let again = within(
        "answering again",
        store.respond(
            &key,
            BTreeMap::from([("confirm.1".to_owned(), json!("no"))]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        (again.accepted.len(), again.ignored.as_slice()),
        (0, &["confirm.1".to_owned()][..])
    );
    let signals = within("renewing", store.renew(&lease, LONG, None)).await;
    assert_eq!(signals.answers["confirm.1"], accept());
    // The holder closes what it took; answering a closed question is ignored.
    within("closing", store.ask(&lease, Asks::new())).await;
    let closed = within(
        "answering a closed question",
        store.respond(&key, BTreeMap::from([("confirm.1".to_owned(), accept())])),
    )
    .await
    .unwrap();
    assert_eq!(closed.ignored, ["confirm.1"]);
    within("finishing", store.finish(&lease, succeeded(json!(1)))).await;
    let ended = within(
        "answering an ended task",
        store.respond(&key, BTreeMap::from([("confirm.1".to_owned(), accept())])),
    )
    .await
    .unwrap();
    assert_eq!(ended.ignored, ["confirm.1"]);
}

/// Two questions at once: one answer leaves the task waiting, with only the other pending;
/// the second makes it work again. A question added beside a pending one keeps that one's
/// answer once given.
pub async fn partial_answers_keep_the_task_waiting<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_partial");
    let lease = create(&*store, &key, LONG, LONG).await;
    let two = Asks::new()
        .with("first.1", form("First?"))
        .with("second.2", form("Second?"));
    within("asking", store.ask(&lease, two.clone())).await;
    within(
        "answering the first",
        store.respond(&key, BTreeMap::from([("first.1".to_owned(), accept())])),
    )
    .await
    .unwrap();
    let partial = found(&*store, &key).await;
    assert_eq!(partial.status, TaskStatus::InputRequired);
    assert_eq!(
        partial.pending().map(|(key, _)| key).collect::<Vec<_>>(),
        ["second.2"]
    );
    // A third question joins the two: the first's answer is kept.
    within(
        "asking a third",
        store.ask(&lease, two.with("third.3", form("Third?"))),
    )
    .await;
    let three = found(&*store, &key).await;
    assert_eq!(three.answers.keys().collect::<Vec<_>>(), ["first.1"]);
    assert_eq!(three.pending().count(), 2);
    within(
        "answering the rest",
        store.respond(
            &key,
            BTreeMap::from([
                ("second.2".to_owned(), accept()),
                ("third.3".to_owned(), accept()),
            ]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    let signals = within("renewing", store.renew(&lease, LONG, None)).await;
    assert_eq!(signals.answers.len(), 3);
}
