//! `Directory` through the runtime, on a real tree: the listing, text and bytes, the size
//! limit, every crafted way out of the root (a secret file sits beside it, and links inside
//! point at it), and real file watching.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use carmy_core::{
    Body, Carmy, ChangeSink, Context, Directory, ErrorCategory, ExecutionStatus, Request, Runtime,
    directory::codes,
};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "TOP SECRET: the recipe";

/// A fresh directory under the system's temporary one, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "carmy-directory-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `base/secret.txt` beside `base/root/`, and in the root: text, bytes, a large file, hidden
/// files, and links (one to the secret, one to the base directory, one inside).
fn tree() -> (Temp, PathBuf) {
    let base = Temp::new();
    let root = base.0.join("root");
    let write = |relative: &str, bytes: &[u8]| {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    std::fs::write(base.0.join("secret.txt"), SECRET).unwrap();
    write("returns.md", b"# Returns\nWithin 30 days.");
    write(
        "logo.png",
        &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 1],
    );
    write("policies/shipping policy.txt", b"Free over 50.");
    write("policies/data.json", br#"{"free_over":50}"#);
    write("Makefile", b"all:\n\ttrue\n");
    write("big.txt", &vec![b'x'; 2048]);
    write(".env", b"TOKEN=hunter2");
    write(".git/config", b"[core]");
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(base.0.join("secret.txt"), root.join("leak.txt")).unwrap();
        symlink(&base.0, root.join("up")).unwrap();
        symlink("../secret.txt", root.join("policies/relative-leak.txt")).unwrap();
        symlink("returns.md", root.join("latest.md")).unwrap();
        symlink(".env", root.join("env.txt")).unwrap();
    }
    (base, root)
}

fn serve(root: &Path) -> (Runtime, Directory) {
    let directory = Directory::new(root).unwrap().max_file_bytes(1024);
    let runtime = Carmy::new()
        .resource_provider(directory.clone())
        .build()
        .unwrap();
    (runtime, directory)
}

fn body_text(body: &Body) -> String {
    match body {
        Body::Text(text) => text.clone(),
        Body::Blob(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn files_are_listed_recursively_in_order_without_links_or_hidden_ones() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let files = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<_> = files.iter().map(|file| file.name()).collect();
    assert_eq!(
        names,
        [
            "Makefile",
            "big.txt",
            "logo.png",
            "policies/data.json",
            "policies/shipping policy.txt",
            "returns.md",
        ]
    );
    let canonical = std::fs::canonicalize(&root).unwrap();
    assert_eq!(directory.root(), canonical);
    let returns = &files[5];
    assert_eq!(
        returns.uri(),
        format!("file://{}/returns.md", canonical.display())
    );
    assert_eq!(returns.mime_type_of(), Some("text/markdown"));
    assert_eq!(returns.size_bytes(), Some(25));
    assert_eq!(
        files[4].uri(),
        format!(
            "file://{}/policies/shipping%20policy.txt",
            canonical.display()
        )
    );
    assert_eq!(files[0].mime_type_of(), None, "sniffed when read");
    assert_eq!(files[2].mime_type_of(), Some("image/png"));
    // Stable: the same list twice.
    let again = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(files, again);
}

#[tokio::test]
async fn the_list_stops_at_its_bound() {
    let (_base, root) = tree();
    let runtime = Carmy::new()
        .resource_provider(Directory::new(&root).unwrap().max_files(2))
        .build()
        .unwrap();
    let files = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<_> = files.iter().map(|file| file.name()).collect();
    assert_eq!(names, ["Makefile", "big.txt"]);
}

#[tokio::test]
async fn text_is_read_as_text_and_the_rest_as_bytes() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let read = |relative: &str| {
        let uri = directory.uri_of(relative).unwrap();
        let runtime = runtime.clone();
        async move { runtime.read(Request::read(uri)).await }
    };
    let returns = read("returns.md").await.result.unwrap();
    let content = returns.iter().next().unwrap();
    assert_eq!(
        content.body(),
        &Body::Text("# Returns\nWithin 30 days.".into())
    );
    assert_eq!(content.mime_type_of(), Some("text/markdown"));
    let logo = read("logo.png").await.result.unwrap();
    let content = logo.iter().next().unwrap();
    assert!(matches!(content.body(), Body::Blob(bytes) if bytes.len() == 10));
    assert_eq!(content.mime_type_of(), Some("image/png"));
    let make = read("Makefile").await.result.unwrap();
    assert_eq!(
        make.iter().next().unwrap().mime_type_of(),
        Some("text/plain")
    );
    let spaced = read("policies/shipping policy.txt").await.result.unwrap();
    assert_eq!(
        spaced.iter().next().unwrap().body(),
        &Body::Text("Free over 50.".into())
    );
    // A link to a file inside the root is followed.
    #[cfg(unix)]
    assert_eq!(
        read("latest.md")
            .await
            .result
            .unwrap()
            .iter()
            .next()
            .unwrap()
            .body(),
        &Body::Text("# Returns\nWithin 30 days.".into())
    );
}

#[tokio::test]
async fn files_over_the_limit_are_refused_and_the_read_recorded() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let outcome = runtime
        .read(Request::read(directory.uri_of("big.txt").unwrap()))
        .await;
    let error = outcome.result.as_ref().unwrap_err();
    assert_eq!(error.code(), codes::FILE_TOO_LARGE);
    assert!(
        error.message().contains("2048 bytes") && error.message().contains("at most 1024"),
        "{}",
        error.message()
    );
    let record = runtime.execution(&outcome.execution_id).unwrap();
    assert_eq!(
        (&*record.target, record.status, record.error_code.as_deref()),
        (
            "files",
            ExecutionStatus::Failed,
            Some(codes::FILE_TOO_LARGE)
        )
    );
}

/// Every crafted URI that could lead to the secret, built on the canonical root.
fn crafted(root: &str) -> Vec<String> {
    let base = root.rsplit_once('/').unwrap().0;
    let mut uris = vec![
        format!("file://{root}/../secret.txt"),
        format!("file://{root}/%2e%2e/secret.txt"),
        format!("file://{root}/%2E%2E/secret.txt"),
        format!("file://{root}/%2e%2E/secret.txt"),
        format!("file://{root}/.%2e/secret.txt"),
        format!("file://{root}/%2e%2e%2fsecret.txt"),
        format!("file://{root}/%2E%2E%2Fsecret.txt"),
        format!("file://{root}/policies/../../secret.txt"),
        format!("file://{root}/policies/%2e%2e/%2e%2e/secret.txt"),
        format!("file://{root}/./../secret.txt"),
        format!("file://{root}/..\\secret.txt"),
        format!("file://{root}/..%5csecret.txt"),
        format!("file://{root}/..%5Csecret.txt"),
        format!("file://{root}%5c..%5csecret.txt"),
        format!("file://{root}/../secret.txt%00"),
        format!("file://{root}/returns.md%00/../../secret.txt"),
        format!("file://{root}/returns.md\0/../../secret.txt"),
        format!("file://{root}//../secret.txt"),
        format!("file://{base}/secret.txt"),
        format!("file://localhost{base}/secret.txt"),
        format!("file://localhost{root}/../secret.txt"),
        format!("file://evil.example{root}/../secret.txt"),
        format!("file://evil.example{base}/secret.txt"),
        format!("file://127.0.0.1{root}/returns.md"),
        format!("file:{root}/../secret.txt"),
        format!("FILE://{root}/../secret.txt"),
        format!("file://{root}/%252e%252e/secret.txt"),
        format!("file://{root}/leak.txt"),
        format!("file://{root}/policies/relative-leak.txt"),
        format!("file://{root}/up/secret.txt"),
        format!("file://{root}/up/root/../secret.txt"),
        format!("file://{root}/returns.md?../../secret.txt"),
        format!("file://{root}/returns.md#/../../secret.txt"),
        format!("file://{root}/env.txt"),
        format!("file://{root}/.env"),
        format!("file://{root}/%2eenv"),
        format!("file://{root}/.git/config"),
        format!("file://{root}/"),
        format!("file://{root}"),
        format!("file://{root}/policies"),
        "file:///etc/passwd".to_owned(),
        "file:///proc/self/environ".to_owned(),
        format!("file://{root}/{}", "a/".repeat(5000)),
    ];
    // The secret's path, every character escaped.
    let escaped: String = format!("{base}/secret.txt")
        .bytes()
        .map(|byte| format!("%{byte:02x}"))
        .collect();
    uris.push(format!("file://{escaped}"));
    uris
}

#[tokio::test]
async fn nothing_outside_the_root_is_ever_read() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let root = directory.root().to_str().unwrap().to_owned();
    for uri in crafted(&root) {
        let outcome = runtime.read(Request::read(uri.clone())).await;
        match &outcome.result {
            Ok(contents) => panic!(
                "{uri:?} was read: {:?}",
                contents
                    .iter()
                    .map(|c| body_text(c.body()))
                    .collect::<Vec<_>>()
            ),
            Err(error) => {
                assert!(!error.message().contains("TOP SECRET"), "{uri:?}");
                assert!(!error.message().contains("hunter2"), "{uri:?}");
            }
        }
    }
    // The answers say why, by code.
    let code = |uri: String| {
        let runtime = runtime.clone();
        async move {
            runtime
                .read(Request::read(uri))
                .await
                .unwrap_error_code()
                .to_owned()
        }
    };
    assert_eq!(
        code(format!("file://{root}/../secret.txt")).await,
        codes::INVALID_FILE_URI
    );
    assert_eq!(
        code(format!("file://{root}/%2E%2e/secret.txt")).await,
        codes::INVALID_FILE_URI
    );
    assert_eq!(
        code(format!("file://{root}/..%5Csecret.txt")).await,
        codes::INVALID_FILE_URI
    );
    assert_eq!(
        code(format!("file://{root}/a%00.md")).await,
        codes::INVALID_FILE_URI
    );
    assert_eq!(
        code(format!("file://evil{root}/returns.md")).await,
        codes::INVALID_FILE_URI
    );
    #[cfg(unix)]
    {
        assert_eq!(
            code(format!("file://{root}/leak.txt")).await,
            codes::OUTSIDE_ROOT
        );
        assert_eq!(
            code(format!("file://{root}/up/secret.txt")).await,
            codes::OUTSIDE_ROOT
        );
        assert_eq!(
            code(format!("file://{root}/env.txt")).await,
            "RESOURCE_NOT_FOUND"
        );
    }
    assert_eq!(
        code("file:///etc/passwd".into()).await,
        "RESOURCE_NOT_FOUND"
    );
    assert_eq!(
        code(format!("file://{root}/.env")).await,
        "RESOURCE_NOT_FOUND"
    );
    // And the server goes on serving.
    let fine = runtime
        .read(Request::read(directory.uri_of("returns.md").unwrap()))
        .await;
    assert_eq!(fine.status, ExecutionStatus::Succeeded);
    assert_eq!(runtime.running_executions(), 0);
}

#[tokio::test]
async fn a_check_accepts_what_a_read_would_and_refuses_the_rest_as_not_found() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let root = directory.root().to_str().unwrap().to_owned();
    let never = CancellationToken::new();
    for relative in ["returns.md", "policies/data.json", "big.txt", "latest.md"] {
        let uri = directory.uri_of(relative).unwrap();
        let checked = runtime.check_resource(&uri, &Context::new(), &never).await;
        assert!(checked.is_ok(), "{uri}: {checked:?}");
    }
    for uri in crafted(&root).into_iter().chain([
        format!("file://{root}/missing.md"),
        "shop://nothing".to_owned(),
    ]) {
        let error = runtime
            .check_resource(&uri, &Context::new(), &never)
            .await
            .unwrap_err();
        assert_eq!(
            error.category(),
            ErrorCategory::NotFound,
            "{uri:?}: {error:?}"
        );
        assert!(!error.message().contains("TOP SECRET"), "{uri:?}");
    }
}

#[tokio::test]
async fn hidden_files_are_served_only_when_asked() {
    let (_base, root) = tree();
    let runtime = Carmy::new()
        .resource_provider(Directory::new(&root).unwrap().hidden(true))
        .build()
        .unwrap();
    let files = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<_> = files.iter().map(|file| file.name()).collect();
    assert!(
        names.contains(&".env") && names.contains(&".git/config"),
        "{names:?}"
    );
    let root = std::fs::canonicalize(&root).unwrap();
    let env = runtime
        .read(Request::read(format!("file://{}/.env", root.display())))
        .await;
    assert_eq!(
        env.result.unwrap().iter().next().unwrap().body(),
        &Body::Text("TOKEN=hunter2".into())
    );
}

#[cfg(unix)]
#[tokio::test]
async fn special_files_are_not_opened() {
    let (_base, root) = tree();
    let fifo = root.join("pipe.txt");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|status| status.success()) {
        return;
    }
    let (runtime, directory) = serve(&root);
    let started = Instant::now();
    let outcome = runtime
        .read(Request::read(directory.uri_of("pipe.txt").unwrap()))
        .await;
    assert_eq!(outcome.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "did not wait for a writer"
    );
    let files = runtime
        .list_provided(&CancellationToken::new())
        .await
        .unwrap();
    assert!(files.iter().all(|file| file.name() != "pipe.txt"));
}

#[test]
fn the_root_must_be_a_directory() {
    let (_base, root) = tree();
    assert!(Directory::new(root.join("returns.md")).is_err());
    assert!(Directory::new(root.join("missing")).is_err());
    let directory = Directory::new(&root).unwrap();
    assert_eq!(directory.uri_of("../secret.txt"), None);
    assert_eq!(directory.uri_of("/etc/passwd"), None);
    assert_eq!(directory.uri_of(".env"), None);
}

/// Collects what the runtime reports.
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

impl Heard {
    /// Waits (bounded) until `wanted` has been heard.
    async fn until(&self, wanted: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.0.lock().unwrap().iter().any(|heard| heard == wanted) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("never heard {wanted:?}: {:?}", self.0.lock().unwrap());
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

#[tokio::test]
async fn edits_on_disk_are_reported_while_someone_listens() {
    let (_base, root) = tree();
    let directory = Directory::new(&root)
        .unwrap()
        .debounce(Duration::from_millis(50));
    let returns = directory.uri_of("returns.md").unwrap();
    let runtime = Carmy::new()
        .resource_provider(directory.clone())
        .build()
        .unwrap();
    assert!(runtime.catalog().reports_resource_changes());
    let heard = Arc::new(Heard::default());
    let watch = runtime.watch_resources(heard.clone()).unwrap();

    std::fs::write(root.join("returns.md"), "# Returns\nWithin 60 days.").unwrap();
    heard.until(&returns).await;
    assert!(
        !heard.take().contains(&"list_changed".to_owned()),
        "an edit, not a list change"
    );

    // Reading is no change.
    let read = runtime.read(Request::read(returns.clone())).await;
    assert_eq!(
        body_text(read.result.unwrap().iter().next().unwrap().body()),
        "# Returns\nWithin 60 days."
    );
    std::fs::write(root.join("policies/new.md"), "new").unwrap();
    heard.until("list_changed").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = heard.take();
    assert!(!after.contains(&returns), "{after:?}");
    std::fs::remove_file(root.join("policies/new.md")).unwrap();
    heard.until("list_changed").await;
    // Hidden files change unheard.
    heard.take();
    std::fs::write(root.join(".env"), "TOKEN=changed").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(heard.take(), Vec::<String>::new());

    drop(watch);
    assert_eq!(runtime.resource_watches(), 0);
    std::fs::write(root.join("returns.md"), "# Returns\nNever.").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        heard.take(),
        Vec::<String>::new(),
        "nobody listens: no watch"
    );
}

#[test]
fn an_unwatched_directory_reports_nothing() {
    let (_base, root) = tree();
    let runtime = Carmy::new()
        .resource_provider(Directory::new(&root).unwrap().watch(false))
        .build()
        .unwrap();
    assert!(!runtime.catalog().reports_resource_changes());
}

#[cfg(unix)]
#[tokio::test]
async fn a_link_leading_outside_answers_alike_whether_anything_is_there() {
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let root = directory.root().to_str().unwrap().to_owned();
    std::os::unix::fs::symlink("/nonexistent-carmy", format!("{root}/nowhere")).unwrap();
    let never = CancellationToken::new();
    // `up` is a link to the directory holding the root and the secret.
    for uri in [
        format!("file://{root}/up/secret.txt"),
        format!("file://{root}/up/missing.txt"),
        format!("file://{root}/up/missing/deeper.txt"),
        format!("file://{root}/nowhere/file.txt"),
    ] {
        let read = runtime.read(Request::read(uri.clone())).await;
        let error = read.result.as_ref().unwrap_err();
        assert_eq!(error.code(), codes::OUTSIDE_ROOT, "{uri}");
        assert_eq!(
            error.message(),
            format!("`{uri}` leads outside the served directory (through a symbolic link)"),
        );
        let checked = runtime
            .check_resource(&uri, &Context::new(), &never)
            .await
            .unwrap_err();
        assert_eq!(checked, *error, "{uri}");
    }
}

/// In the root: `public/guide.md`, `private/plans.md`, and in `public` links into `private`:
/// `plans.md` to the file, `private` to the directory.
#[cfg(unix)]
fn ruled_tree() -> (Temp, PathBuf) {
    let base = Temp::new();
    let root = base.0.join("root");
    std::fs::create_dir_all(root.join("public")).unwrap();
    std::fs::create_dir_all(root.join("private")).unwrap();
    std::fs::write(root.join("public/guide.md"), "# Guide").unwrap();
    std::fs::write(root.join("private/plans.md"), SECRET).unwrap();
    std::os::unix::fs::symlink("../private/plans.md", root.join("public/plans.md")).unwrap();
    std::os::unix::fs::symlink("../private", root.join("public/private")).unwrap();
    (base, root)
}

#[cfg(unix)]
#[tokio::test]
async fn a_link_inside_the_root_leads_no_reader_around_the_rules() {
    use carmy_core::Access;
    let (_base, root) = ruled_tree();
    let (runtime, directory) = serve(&root);
    let root = directory.root().to_str().unwrap().to_owned();
    let access: Access = format!("resource:file://{root}/public/*").parse().unwrap();
    let public_only = Context::new().with_access(access);
    let read = |relative: &str, context: Context| {
        let (runtime, uri) = (runtime.clone(), format!("file://{root}/{relative}"));
        async move { runtime.read(Request::read(uri).context(context)).await }
    };
    let guide = read("public/guide.md", public_only.clone()).await;
    assert_eq!(
        body_text(guide.result.unwrap().iter().next().unwrap().body()),
        "# Guide"
    );
    // The rules decide on the file reached, not only on the URI asked; and whether the file
    // there exists is not told.
    for relative in [
        "private/plans.md",
        "public/plans.md",
        "public/private/plans.md",
        "public/private/missing.md",
    ] {
        let refused = read(relative, public_only.clone()).await;
        let error = refused.result.as_ref().unwrap_err();
        assert_eq!(error.code(), "RESOURCE_NOT_ALLOWED", "{relative}");
        assert_eq!(error.category(), ErrorCategory::Permission, "{relative}");
        assert!(!error.message().contains("TOP SECRET"), "{relative}");
        // Followed only as far as it could be read.
        let uri = format!("file://{root}/{relative}");
        let checked = runtime
            .check_resource(&uri, &public_only, &CancellationToken::new())
            .await;
        assert_eq!(checked.as_ref(), Err(error), "{relative}");
    }
    // Unrestricted, a link inside the root is followed.
    let plans = read("public/plans.md", Context::new()).await;
    assert_eq!(
        body_text(plans.result.unwrap().iter().next().unwrap().body()),
        SECRET
    );
}

#[tokio::test]
async fn the_walk_stops_at_its_budget_and_lists_what_came_before() {
    let base = Temp::new();
    let root = base.0.join("root");
    for n in 0..30 {
        std::fs::create_dir_all(root.join(format!("b/{n:02}"))).unwrap();
    }
    std::fs::write(root.join("a.md"), "a").unwrap();
    std::fs::write(root.join("z.md"), "z").unwrap();
    let listed = |directory: Directory| async move {
        let runtime = Carmy::new().resource_provider(directory).build().unwrap();
        let files = runtime
            .list_provided(&CancellationToken::new())
            .await
            .unwrap();
        files
            .iter()
            .map(|file| file.name().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        listed(Directory::new(&root).unwrap()).await,
        ["a.md", "z.md"]
    );
    // The root's 3 entries, then `b`'s 30 are more than are left: the walk stops before them,
    // and what is listed is what comes before in the full list.
    assert_eq!(
        listed(Directory::new(&root).unwrap().max_entries(10)).await,
        ["a.md"]
    );
    assert_eq!(
        listed(Directory::new(&root).unwrap().max_entries(2)).await,
        Vec::<String>::new()
    );
    assert_eq!(
        listed(Directory::new(&root).unwrap().max_entries(33)).await,
        ["a.md", "z.md"]
    );
}

#[cfg(unix)]
#[tokio::test]
async fn links_inside_the_root_are_followed_however_written_and_a_loop_is_refused() {
    use std::os::unix::fs::symlink;
    let (_base, root) = tree();
    let (runtime, directory) = serve(&root);
    let canonical = directory.root().to_owned();
    symlink(canonical.join("returns.md"), root.join("absolute.md")).unwrap();
    symlink("../returns.md", root.join("policies/up.md")).unwrap();
    symlink("policies", root.join("rules")).unwrap();
    symlink("./policies/../latest.md", root.join("twice.md")).unwrap();
    symlink("loop", root.join("loop")).unwrap();
    let read = |relative: &str| {
        let (runtime, uri) = (runtime.clone(), directory.uri_of(relative).unwrap());
        async move { runtime.read(Request::read(uri)).await }
    };
    for relative in ["absolute.md", "policies/up.md", "twice.md"] {
        let contents = read(relative).await.result.unwrap();
        assert_eq!(
            body_text(contents.iter().next().unwrap().body()),
            "# Returns\nWithin 30 days.",
            "{relative}"
        );
    }
    let data = read("rules/data.json").await.result.unwrap();
    let content = data.iter().next().unwrap();
    assert_eq!(content.mime_type_of(), Some("application/json"));
    assert_eq!(
        read("loop").await.unwrap_error_code(),
        codes::FILE_UNREADABLE
    );
    assert_eq!(runtime.running_executions(), 0);
}
