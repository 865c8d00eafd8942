//! Resource providers through the runtime: resolution after the catalog's own resources and in
//! registration order, lists, reads under the guard and recorded under the provider's name,
//! names checked by `build()`, and watches started and stopped with their listeners.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Body, BuildProblem, Carmy, ChangeSink, Content, Contents, ExecutionKind,
    ExecutionStatus, Invocation, Limits, NoInput, OutcomeKind, ProvidedResource, Request, Resource,
    ResourceChanges, ResourceProvider, ResourceSpec, Watching,
};
use tokio_util::sync::CancellationToken;

/// Serves `mem://<prefix>/<name>` for its names; misbehaves for `panic`, `slow` and `fail`.
struct Memory {
    name: &'static str,
    prefix: &'static str,
    files: Vec<&'static str>,
    watches: Arc<AtomicUsize>,
    changes: Arc<Mutex<Option<ResourceChanges>>>,
}

fn memory(name: &'static str, prefix: &'static str, files: &[&'static str]) -> Memory {
    Memory {
        name,
        prefix,
        files: files.to_vec(),
        watches: Arc::default(),
        changes: Arc::default(),
    }
}

struct Live(Arc<AtomicUsize>);
impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ResourceProvider for Memory {
    fn name(&self) -> &'static str {
        self.name
    }

    fn claims(&self, uri: &str) -> bool {
        uri.strip_prefix("mem://")
            .and_then(|rest| rest.strip_prefix(self.prefix))
            .is_some_and(|rest| rest.starts_with('/'))
    }

    async fn list(&self) -> Result<Vec<ProvidedResource>, AgentError> {
        if self.files.contains(&"fail") {
            return Err(AgentError::unavailable("DOWN", "the store is down"));
        }
        Ok(self
            .files
            .iter()
            .map(|file| {
                ProvidedResource::new(format!("mem://{}/{file}", self.prefix), *file)
                    .mime_type("text/plain")
                    .size(file.len() as u64)
            })
            .collect())
    }

    async fn read(&self, uri: &str, _: Invocation) -> Result<Contents, AgentError> {
        let file = uri.rsplit('/').next().unwrap_or_default();
        match file {
            "panic" => panic!("the provider broke"),
            "slow" => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(Contents::new())
            }
            _ if self.files.contains(&file) => {
                Ok(Content::text(format!("{}:{file}", self.name)).into())
            }
            _ => Err(AgentError::not_found(
                "RESOURCE_NOT_FOUND",
                format!("no `{file}`"),
            )),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(200))
    }

    fn reports_changes(&self) -> bool {
        true
    }

    fn watch(&self, changes: ResourceChanges) -> Result<Watching, AgentError> {
        *self.changes.lock().unwrap() = Some(changes);
        self.watches.fetch_add(1, Ordering::SeqCst);
        Ok(Watching::new(Live(Arc::clone(&self.watches))))
    }
}

struct Fixed;
impl Resource for Fixed {
    type Input = NoInput;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("fixed", "mem://docs/readme");
    async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("the catalog's own".into())
    }
}

fn text(outcome: &carmy_core::Outcome<Contents>) -> String {
    match outcome
        .result
        .as_ref()
        .expect("read")
        .iter()
        .next()
        .unwrap()
        .body()
    {
        Body::Text(text) => text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_catalogs_own_resources_come_first_then_providers_in_registration_order() {
    let runtime = Carmy::new()
        .resource_provider(memory("docs", "docs", &["readme", "a"]))
        .resource_provider(memory("all", "docs", &["a", "b"]))
        .resource(Fixed)
        .build()
        .unwrap();
    let read = |uri: &str| runtime.read(Request::read(uri));
    assert_eq!(text(&read("mem://docs/readme").await), "the catalog's own");
    assert_eq!(
        text(&read("mem://docs/a").await),
        "docs:a",
        "the first claim wins"
    );
    // The first provider claimed `b`: its answer stands, the second is not asked.
    let outcome = read("mem://docs/b").await;
    assert_eq!(outcome.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    assert_eq!(outcome.kind, OutcomeKind::Result, "claimed, so routed");
    let record = runtime.execution(&outcome.execution_id).unwrap();
    assert_eq!(
        (record.kind, &*record.target, record.status),
        (ExecutionKind::Read, "docs", ExecutionStatus::Failed)
    );
    let nobody = read("mem://other/a").await;
    assert_eq!(nobody.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    assert_eq!(nobody.kind, OutcomeKind::Unroutable);
    let listed = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap();
    let uris: Vec<_> = listed.iter().map(ProvidedResource::uri).collect();
    assert_eq!(
        uris,
        [
            "mem://docs/readme",
            "mem://docs/a",
            "mem://docs/a",
            "mem://docs/b"
        ]
    );
    assert_eq!(listed[1].size_bytes(), Some(1));
    assert_eq!(listed[1].mime_type_of(), Some("text/plain"));
    assert_eq!(runtime.catalog().providers().count(), 2);
    assert!(runtime.catalog().reports_resource_changes());
}

#[tokio::test]
async fn provider_reads_are_guarded_and_recorded() {
    let runtime = Carmy::new()
        .resource_provider(memory("docs", "docs", &["a", "panic", "slow"]))
        .build()
        .unwrap();
    let panicked = runtime.read(Request::read("mem://docs/panic")).await;
    assert_eq!(panicked.unwrap_error_code(), "TOOL_PANIC");
    assert_eq!(panicked.status, ExecutionStatus::Panicked);
    let slow = runtime.read(Request::read("mem://docs/slow")).await;
    assert_eq!(slow.status, ExecutionStatus::TimedOut);
    let token = CancellationToken::new();
    token.cancel();
    let cancelled = runtime
        .read(Request::read("mem://docs/slow").cancellation(token))
        .await;
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    for outcome in [&panicked, &slow, &cancelled] {
        let record = runtime.execution(&outcome.execution_id).unwrap();
        assert_eq!((&*record.target, record.status), ("docs", outcome.status));
    }
    // And it keeps serving.
    assert_eq!(
        text(&runtime.read(Request::read("mem://docs/a")).await),
        "docs:a"
    );
    assert_eq!(runtime.running_executions(), 0);
}

#[tokio::test]
async fn reads_and_lists_share_the_runtimes_capacity() {
    let runtime = Carmy::new()
        .resource_provider(memory("docs", "docs", &["a", "slow"]))
        .limits(Limits::default().with_max_concurrent_executions(1))
        .build()
        .unwrap();
    let busy = runtime.read(Request::read("mem://docs/slow"));
    let refused = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        (
            runtime.read(Request::read("mem://docs/a")).await,
            runtime.list_provided(&CancellationToken::new()).await,
        )
    };
    let (_, (read, list)) = tokio::join!(busy, refused);
    assert_eq!(read.unwrap_error_code(), "CAPACITY");
    assert_eq!(read.status, ExecutionStatus::Rejected);
    assert_eq!(list.unwrap_err().code(), "CAPACITY");
}

#[tokio::test]
async fn a_failing_list_fails_the_whole() {
    let runtime = Carmy::new()
        .resource_provider(memory("docs", "docs", &["a"]))
        .resource_provider(memory("down", "down", &["fail"]))
        .build()
        .unwrap();
    let error = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "DOWN");
}

#[test]
fn provider_names_are_unique_among_resources() {
    let error = Carmy::new()
        .resource(Fixed)
        .resource_provider(memory("fixed", "a", &[]))
        .resource_provider(memory("twice", "b", &[]))
        .resource_provider(memory("twice", "c", &[]))
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems(),
        [
            BuildProblem::DuplicateResourceName {
                name: "fixed".into()
            },
            BuildProblem::DuplicateResourceName {
                name: "twice".into()
            },
        ]
    );
}

#[derive(Default)]
struct Heard(Mutex<Vec<String>>);
impl ChangeSink for Heard {
    fn updated(&self, uri: &str) {
        self.0.lock().unwrap().push(uri.to_owned());
    }
    fn list_changed(&self) {
        self.0.lock().unwrap().push("list_changed".to_owned());
    }
}

#[test]
fn providers_watch_only_while_someone_listens() {
    let provider = memory("docs", "docs", &["a"]);
    let (watches, changes) = (Arc::clone(&provider.watches), Arc::clone(&provider.changes));
    let runtime = Carmy::new().resource_provider(provider).build().unwrap();
    assert_eq!(watches.load(Ordering::SeqCst), 0, "nobody listens yet");
    let heard = Arc::new(Heard::default());
    let watch = runtime.watch_resources(heard.clone()).unwrap();
    let second = runtime.watch_resources(Arc::new(Heard::default())).unwrap();
    assert_eq!(watches.load(Ordering::SeqCst), 1);
    assert_eq!(runtime.resource_watches(), 2);
    let changes = changes.lock().unwrap().clone().unwrap();
    changes.updated("mem://docs/a");
    changes.list_changed();
    assert_eq!(*heard.0.lock().unwrap(), ["mem://docs/a", "list_changed"]);
    drop(watch);
    drop(second);
    assert_eq!(runtime.resource_watches(), 0);
    assert_eq!(
        watches.load(Ordering::SeqCst),
        0,
        "the last listener stopped it"
    );
    changes.updated("mem://docs/a");
    assert_eq!(heard.0.lock().unwrap().len(), 2);
}

#[test]
fn a_runtime_without_providers_reports_no_changes() {
    let runtime = Carmy::new().resource(Fixed).build().unwrap();
    assert!(!runtime.catalog().reports_resource_changes());
    // Watching is harmless: nothing will ever be reported.
    let _watch = runtime.watch_resources(Arc::new(Heard::default())).unwrap();
    assert_eq!(runtime.resource_watches(), 1);
}
