//! What the conformance suites share to run a scenario: [`Stores`], which opens each fresh store
//! in a directory of its own on a blocking thread, [`run`], which gives a scenario a scratch
//! directory and a runtime of its own, and the `#[test]`s the suites' macros expand to.

use std::{
    future::Future,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

/// How a scenario opens fresh stores: the closure given to a suite's macro, and the scenario's
/// scratch directory, under which each store gets one of its own.
pub(crate) struct Stores<Setup, S> {
    open: Arc<dyn Fn(Setup) -> S + Send + Sync>,
    pub(crate) dir: PathBuf,
}

impl<Setup, S> Clone for Stores<Setup, S> {
    fn clone(&self) -> Self {
        Self {
            open: Arc::clone(&self.open),
            dir: self.dir.clone(),
        }
    }
}

impl<Setup: Send + 'static, S: Send + 'static> Stores<Setup, S> {
    pub(crate) fn new(open: impl Fn(Setup) -> S + Send + Sync + 'static, dir: PathBuf) -> Self {
        Self {
            open: Arc::new(open),
            dir,
        }
    }

    /// A fresh store: `setup` is given a new, empty directory, and the store it describes is
    /// opened on a blocking thread (opening a file or a connection may block).
    pub(crate) async fn open(&self, setup: impl FnOnce(PathBuf) -> Setup) -> Arc<S> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = self
            .dir
            .join(format!("store-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).expect("a scratch directory for the store");
        let setup = setup(dir);
        let open = Arc::clone(&self.open);
        let store = tokio::task::spawn_blocking(move || open(setup))
            .await
            .expect("opening the store panicked");
        Arc::new(store)
    }
}

/// Removes a scenario's scratch directory, even when it fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `scenario` on a runtime of its own, given a scratch directory named after `suite` and
/// the scenario's `name`, removed when it ends.
pub(crate) fn run<Fut: Future<Output = ()>>(
    suite: &str,
    name: &str,
    scenario: impl FnOnce(PathBuf) -> Fut,
) {
    let dir = std::env::temp_dir().join(format!(
        "{suite}-{}-{name}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _scratch = Scratch(dir.clone());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(scenario(dir));
}

/// One `#[test]` per scenario `name` of the suite `$suite`, each run by `$checker::check` against
/// the stores `$open` opens, unless `$available` is not `true`: what the suites' macros
/// (`conformance_tests!` and the others) expand to.
#[doc(hidden)]
#[macro_export]
macro_rules! __scenario_tests {
    ($checker:ident, $suite:ident, $open:expr, $available:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if !$available {
                    return;
                }
                $crate::$checker::check(
                    ::core::stringify!($name),
                    $open,
                    $crate::$suite::$name,
                );
            }
        )*
    };
}
