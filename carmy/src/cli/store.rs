//! `--store <memory | PATH | postgres://... | redis://...>` (feature `store`): where the
//! serving subcommands keep idempotency claims and outcomes, the application's records and
//! tasks.
//!
//! By default a durable [`SqliteStore`] file in the user's data directory, so a retried write
//! is replayed, not run again, after the server restarts; `memory` keeps the per-process store;
//! a `postgres://` or `redis://` URL (features `postgres` and `redis`) puts them on a server
//! that replicas share. The flag beats `CARMY_STORE`, which beats the default. Only a command
//! line that builds its runtime ([`Cli::with_files`](super::Cli::with_files)) can choose the
//! runtime's store.
//!
//! `[request_ids]` bounds the request ids the chosen store keeps; a bound it leaves unset is the
//! store's own default (a memory's for `memory`, a disk's for the others).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::ExitCode,
};

use carmy_core::{Carmy, MemoryStore, MemoryStoreLimits, Quotas};

use super::{config::RequestIds, redact::redacted};
use carmy_store::{SqliteStore, SqliteStoreOptions};
use clap::{Arg, Command, value_parser};

/// Read when `--store` is not given.
pub(super) const STORE_ENV: &str = "CARMY_STORE";

/// `quotas` (a store's quotas of request ids) with the bounds `bounds` sets; a bound it leaves
/// unset keeps the store's own.
fn bounded(quotas: Quotas, bounds: &RequestIds) -> Quotas {
    let mut quotas = quotas;
    if let Some(max) = bounds.max_per_principal {
        quotas = quotas.with_max_per_principal(max);
    }
    if let Some(max) = bounds.max_bytes_per_principal {
        quotas = quotas.with_max_bytes_per_principal(max);
    }
    if let Some(max) = bounds.max {
        quotas = quotas.with_max(max);
    }
    if let Some(max) = bounds.max_bytes {
        quotas = quotas.with_max_bytes(max);
    }
    quotas
}

/// `command` with the flag on each subcommand that serves.
pub(super) fn add_arg(mut command: Command, name: &str) -> Command {
    for serving in ["serve", "mcp", "http", "unix", "config"] {
        if command.find_subcommand(serving).is_some() {
            command = command.mut_subcommand(serving, |sub| sub.arg(arg(name)));
        }
    }
    command
}

fn arg(name: &str) -> Arg {
    Arg::new("store")
        .long("store")
        .value_name("memory|PATH|URL")
        .value_parser(value_parser!(OsString))
        .help(format!(
            "Keep idempotency claims, outcomes and records in the SQLite file PATH (shared by \
             every process that opens it, kept across restarts), in a PostgreSQL database or a \
             Redis server shared by replicas (postgres://USER@HOST/DB, redis://HOST:PORT/), or \
             `memory` for this process only [env: {STORE_ENV}] [default: $XDG_DATA_HOME or \
             ~/.local/share, then carmy/{name}/store.sqlite]"
        ))
}

/// Where the store is to be kept.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Memory,
    /// A file named on the command line or in the environment: its directory must be there.
    Given(PathBuf),
    /// The default file: its directories are created.
    Default(PathBuf),
    /// A PostgreSQL database, by URL.
    Postgres(String),
    /// A Redis server, by URL.
    Redis(String),
}

/// The store chosen by `given` (the flag, else the environment), for the binary `name`.
fn choose(given: Option<OsString>, name: &str) -> Result<Choice, String> {
    match given.filter(|given| !given.is_empty()) {
        Some(given) if given == "memory" => Ok(Choice::Memory),
        Some(given) => Ok(given
            .to_str()
            .and_then(server_url)
            .unwrap_or_else(|| Choice::Given(PathBuf::from(given)))),
        None => data_dir()
            .map(|dir| Choice::Default(dir.join("carmy").join(name).join("store.sqlite")))
            .ok_or_else(|| {
                "no data directory for the idempotency store ($XDG_DATA_HOME and $HOME are \
                 unset or relative); pass --store PATH, or --store memory"
                    .to_owned()
            }),
    }
}

/// A store on a server, if `given` is a URL of one (by its scheme).
fn server_url(given: &str) -> Option<Choice> {
    let (scheme, _) = given.split_once("://")?;
    match scheme.to_ascii_lowercase().as_str() {
        "postgres" | "postgresql" => Some(Choice::Postgres(given.to_owned())),
        "redis" | "rediss" => Some(Choice::Redis(given.to_owned())),
        _ => None,
    }
}

/// Whether `given` names a store replicas share (a PostgreSQL or Redis server).
pub(super) fn is_shared(given: &str) -> bool {
    server_url(given).is_some()
}

/// The XDG data directory: `$XDG_DATA_HOME`, else `$HOME/.local/share` (a relative value is
/// ignored, as the XDG specification says).
fn data_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute("XDG_DATA_HOME").or_else(|| absolute("HOME").map(|home| home.join(".local/share")))
}

/// `carmy` with the store `--store` (or `CARMY_STORE`, or the default) names, for a serving
/// subcommand; other subcommands keep the in-memory store. A usage error (exit 2) for a
/// directory that is not there, a failure (exit 1) for a file that cannot be opened as a store.
pub(super) async fn apply(
    carmy: Carmy,
    name: &str,
    given: Option<&str>,
    bounds: &RequestIds,
) -> Result<Carmy, ExitCode> {
    let path = match choose(given.map(OsString::from), name) {
        Ok(Choice::Memory) => return Ok(memory(carmy, bounds)),
        Ok(Choice::Postgres(url)) => return postgres(carmy, &url, bounds).await,
        Ok(Choice::Redis(url)) => return redis(carmy, &url, bounds).await,
        Ok(Choice::Given(path)) => {
            let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty());
            if dir.is_some_and(|dir| !dir.is_dir()) {
                eprintln!(
                    "error: --store {}: its directory is not there",
                    shown(&path)
                );
                return Err(ExitCode::from(2));
            }
            path
        }
        Ok(Choice::Default(path)) => {
            if let Some(dir) = path.parent()
                && let Err(error) = create_private_dir(dir)
            {
                eprintln!(
                    "error: cannot create {} for the idempotency store: {error}; pass --store \
                     PATH or --store memory",
                    dir.display()
                );
                return Err(ExitCode::FAILURE);
            }
            path
        }
        Err(message) => {
            eprintln!("error: {message}");
            return Err(ExitCode::from(2));
        }
    };
    // Opening blocks (the file, another process's lock): not on the executor's thread.
    let opening = path.clone();
    let options = SqliteStoreOptions::default().with_request_ids(|quotas| bounded(quotas, bounds));
    let opened =
        tokio::task::spawn_blocking(move || SqliteStore::open_with(opening, options)).await;
    match opened {
        Ok(Ok(store)) => {
            tracing::info!(path = %shown(&path), "idempotency store");
            Ok(with_store(carmy, store))
        }
        Ok(Err(error)) => {
            eprintln!("error: --store {}: {error}", shown(&path));
            Err(ExitCode::FAILURE)
        }
        Err(error) => {
            eprintln!("error: --store {}: {error}", shown(&path));
            Err(ExitCode::FAILURE)
        }
    }
}

/// A file's path as messages and logs show it: a value meant as a server's address (with a
/// password) and taken for a file is shown without the password.
fn shown(path: &Path) -> String {
    redacted(&path.to_string_lossy())
}

/// A store on the PostgreSQL database at `url`, its layout created or migrated first. A
/// database that cannot be reached now is a failure (exit 1): the server does not start.
#[cfg(feature = "postgres")]
async fn postgres(carmy: Carmy, url: &str, bounds: &RequestIds) -> Result<Carmy, ExitCode> {
    let options = carmy_store::PostgresStoreOptions::default()
        .with_request_ids(|quotas| bounded(quotas, bounds));
    match carmy_store::PostgresStore::connect_with(url, options).await {
        Ok(store) => {
            tracing::info!(store = ?store, "idempotency store");
            Ok(with_server_store(carmy, store))
        }
        Err(error) => {
            eprintln!("error: --store {}: {error}", redacted(url));
            Err(ExitCode::FAILURE)
        }
    }
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: Carmy, url: &str, _: &RequestIds) -> Result<Carmy, ExitCode> {
    unsupported(url, "postgres")
}

/// A store on the Redis server at `url`. A server that cannot be reached now is a failure
/// (exit 1): the server does not start.
#[cfg(feature = "redis")]
async fn redis(carmy: Carmy, url: &str, bounds: &RequestIds) -> Result<Carmy, ExitCode> {
    let options = carmy_store::RedisStoreOptions::default()
        .with_request_ids(|quotas| bounded(quotas, bounds));
    match carmy_store::RedisStore::connect_with(url, options).await {
        Ok(store) => {
            tracing::info!(store = ?store, "idempotency store");
            Ok(with_server_store(carmy, store))
        }
        Err(error) => {
            eprintln!("error: --store {}: {error}", redacted(url));
            Err(ExitCode::FAILURE)
        }
    }
}

#[cfg(not(feature = "redis"))]
async fn redis(_: Carmy, url: &str, _: &RequestIds) -> Result<Carmy, ExitCode> {
    unsupported(url, "redis")
}

/// A URL of a store this binary was built without: bad usage (exit 2), naming the feature.
#[cfg(not(all(feature = "postgres", feature = "redis")))]
fn unsupported(url: &str, feature: &str) -> Result<Carmy, ExitCode> {
    eprintln!(
        "error: --store {}: this binary was built without the `{feature}` store (carmy's \
         feature `{feature}`)",
        redacted(url)
    );
    Err(ExitCode::from(2))
}

/// `carmy` with an in-memory store bounded as `bounds` says; unchanged when they set nothing,
/// so a builder's own in-memory store (and its bounds) is kept.
fn memory(carmy: Carmy, bounds: &RequestIds) -> Carmy {
    if bounds.set().is_empty() {
        return carmy;
    }
    carmy.store(MemoryStore::new(
        MemoryStoreLimits::default().with_request_ids(|quotas| bounded(quotas, bounds)),
    ))
}

/// `carmy` keeping its claims, outcomes, records, tasks and redeemed single-use tokens in
/// `store`, so that replicas sharing it redeem a token once between them.
fn with_store<S>(carmy: Carmy, store: S) -> Carmy
where
    S: carmy_core::RecordStore + carmy_core::TaskStore + carmy_core::RedemptionStore,
{
    let store = std::sync::Arc::new(store);
    carmy
        .store(std::sync::Arc::clone(&store))
        .task_store(std::sync::Arc::clone(&store))
        .redemption_store(store)
}

/// [`with_store`], for a store on a server (PostgreSQL, Redis) that replicas share: the
/// buckets of rate-limited tools too, so they share each tool's limit, and the feed that tells
/// them each other's resource changes. A SQLite file keeps the buckets in each process (a take
/// would be a write to the file per call).
#[cfg(any(feature = "postgres", feature = "redis"))]
fn with_server_store<S>(carmy: Carmy, store: S) -> Carmy
where
    S: carmy_core::RecordStore
        + carmy_core::TaskStore
        + carmy_core::RedemptionStore
        + carmy_core::RateLimitStore
        + carmy_core::ChangeFeed,
{
    let store = std::sync::Arc::new(store);
    with_store(carmy, std::sync::Arc::clone(&store))
        .rate_limit_store(std::sync::Arc::clone(&store))
        .change_feed(store)
}

/// Creates `dir` and its parents, readable by the user alone: outcomes may hold what tools
/// returned to them.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_sets_only_the_bounds_it_names() {
        let store = Quotas::new(10, 20, 30, 40, 50);
        assert_eq!(bounded(store, &RequestIds::default()), store);
        let bounds = RequestIds {
            max_per_principal: Some(1),
            max_bytes: Some(4),
            ..RequestIds::default()
        };
        assert_eq!(bounded(store, &bounds), Quotas::new(1, 20, 30, 4, 50));
    }

    #[test]
    fn memory_a_path_or_the_data_directory() {
        assert_eq!(choose(Some("memory".into()), "shop"), Ok(Choice::Memory));
        assert_eq!(
            choose(Some("/tmp/x/store.sqlite".into()), "shop"),
            Ok(Choice::Given("/tmp/x/store.sqlite".into()))
        );
        assert_eq!(
            choose(Some("postgres://carmy@db.internal/shop".into()), "shop"),
            Ok(Choice::Postgres("postgres://carmy@db.internal/shop".into()))
        );
        assert_eq!(
            choose(Some("postgresql://db/shop".into()), "shop"),
            Ok(Choice::Postgres("postgresql://db/shop".into()))
        );
        assert_eq!(
            choose(Some("redis://127.0.0.1:6379/0".into()), "shop"),
            Ok(Choice::Redis("redis://127.0.0.1:6379/0".into()))
        );
        // Anything else is a file, even with a colon in its name.
        assert_eq!(
            choose(Some("./data:v2/store.sqlite".into()), "shop"),
            Ok(Choice::Given("./data:v2/store.sqlite".into()))
        );
        // An empty value is no value.
        match (choose(Some(OsString::new()), "shop"), data_dir()) {
            (Ok(Choice::Default(path)), Some(dir)) => {
                assert_eq!(path, dir.join("carmy/shop/store.sqlite"));
            }
            (Err(_), None) => {}
            other => panic!("{other:?}"),
        }
    }
}
