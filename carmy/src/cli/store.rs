//! `--store <memory | PATH>` (feature `store`): where the serving subcommands keep idempotency
//! claims and outcomes.
//!
//! By default a durable [`SqliteStore`] file in the user's data directory, so a retried write
//! is replayed, not run again, after the server restarts; `memory` keeps the per-process store.
//! The flag beats `CARMY_STORE`, which beats the default. Only a command line that builds its
//! runtime ([`Cli::with_files`](super::Cli::with_files)) can choose the runtime's store.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::ExitCode,
};

use carmy_core::Carmy;
use carmy_store::SqliteStore;
use clap::{Arg, ArgMatches, Command, value_parser};

/// Read when `--store` is not given.
pub(super) const STORE_ENV: &str = "CARMY_STORE";

/// `command` with the flag on each subcommand that serves.
pub(super) fn add_arg(mut command: Command, name: &str) -> Command {
    for serving in ["mcp", "http", "unix"] {
        if command.find_subcommand(serving).is_some() {
            command = command.mut_subcommand(serving, |sub| sub.arg(arg(name)));
        }
    }
    command
}

fn arg(name: &str) -> Arg {
    Arg::new("store")
        .long("store")
        .value_name("memory|PATH")
        .value_parser(value_parser!(OsString))
        .help(format!(
            "Keep idempotency claims and outcomes in the SQLite file PATH (shared by every \
             process that opens it, kept across restarts), or `memory` for this process only \
             [env: {STORE_ENV}] [default: $XDG_DATA_HOME or ~/.local/share, then \
             carmy/{name}/store.sqlite]"
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
}

/// The store chosen by `given` (the flag, else the environment), for the binary `name`.
fn choose(given: Option<OsString>, name: &str) -> Result<Choice, String> {
    match given.filter(|given| !given.is_empty()) {
        Some(given) if given == "memory" => Ok(Choice::Memory),
        Some(path) => Ok(Choice::Given(PathBuf::from(path))),
        None => data_dir()
            .map(|dir| Choice::Default(dir.join("carmy").join(name).join("store.sqlite")))
            .ok_or_else(|| {
                "no data directory for the idempotency store ($XDG_DATA_HOME and $HOME are \
                 unset or relative); pass --store PATH, or --store memory"
                    .to_owned()
            }),
    }
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
    matches: &ArgMatches,
) -> Result<Carmy, ExitCode> {
    let Ok(flag) = matches.try_get_one::<OsString>("store") else {
        return Ok(carmy);
    };
    let given = flag.cloned().or_else(|| std::env::var_os(STORE_ENV));
    let path = match choose(given, name) {
        Ok(Choice::Memory) => return Ok(carmy),
        Ok(Choice::Given(path)) => {
            let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty());
            if dir.is_some_and(|dir| !dir.is_dir()) {
                eprintln!(
                    "error: --store {}: its directory is not there",
                    path.display()
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
    let opened = tokio::task::spawn_blocking(move || SqliteStore::open(opening)).await;
    match opened {
        Ok(Ok(store)) => {
            tracing::info!(path = %path.display(), "idempotency store");
            Ok(carmy.store(store))
        }
        Ok(Err(error)) => {
            eprintln!("error: --store {}: {error}", path.display());
            Err(ExitCode::FAILURE)
        }
        Err(error) => {
            eprintln!("error: --store {}: {error}", path.display());
            Err(ExitCode::FAILURE)
        }
    }
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
    fn memory_a_path_or_the_data_directory() {
        assert_eq!(choose(Some("memory".into()), "shop"), Ok(Choice::Memory));
        assert_eq!(
            choose(Some("/tmp/x/store.sqlite".into()), "shop"),
            Ok(Choice::Given("/tmp/x/store.sqlite".into()))
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
