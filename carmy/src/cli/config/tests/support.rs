//! What every configuration test starts from: the real command line's flags, an environment
//! and files of its own.

use std::{
    fmt,
    ops::Deref,
    path::PathBuf,
    sync::atomic::{AtomicUsize, Ordering},
};

use clap::ArgMatches;

use crate::cli::Cli;
use crate::cli::config::{ConfigError, Loaded, Transport, load};

/// The subcommand's matches, parsed as a binary named `shop` would parse them.
pub(super) fn parse(args: &[&str]) -> (String, ArgMatches) {
    let cli = Cli::build(carmy_core::Carmy::new()).name("shop");
    let all = cli
        .command()
        .try_get_matches_from(std::iter::once("shop").chain(args.iter().copied()))
        .expect("the command line parses");
    let (name, sub) = all.subcommand().expect("a subcommand");
    (name.to_owned(), sub.clone())
}

pub(super) fn load_with(args: &[&str], env: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    let (name, sub) = parse(args);
    let implied = match name.as_str() {
        "mcp" => Some(Transport::Stdio),
        "http" => Some(Transport::Http),
        "unix" => Some(Transport::Unix),
        _ => None,
    };
    let vars = env
        .iter()
        .map(|(name, value)| ((*name).into(), (*value).into()));
    load(&sub, implied, vars)
}

pub(super) fn loaded(args: &[&str], env: &[(&str, &str)]) -> Loaded {
    load_with(args, env).expect("the configuration loads")
}

pub(super) fn error(args: &[&str], env: &[(&str, &str)]) -> String {
    load_with(args, env)
        .expect_err("the configuration is refused")
        .0
}

/// A file named `name` holding `text`, in a directory of its own, removed with the directory
/// when the value is dropped.
pub(super) fn file(name: &str, text: &str) -> TestFile {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "carmy-config-{}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the file");
    TestFile {
        path: path.to_string_lossy().into_owned(),
        dir,
    }
}

/// A test's file, as its path; its directory goes when it does.
pub(super) struct TestFile {
    path: String,
    dir: PathBuf,
}

impl TestFile {
    pub(super) fn as_str(&self) -> &str {
        &self.path
    }
}

impl Deref for TestFile {
    type Target = str;

    fn deref(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for TestFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
