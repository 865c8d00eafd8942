//! `--resource-root DIR` (`resources.root_path`; feature `fs`): a binary that serves a directory's files as resources
//! ([`Directory`]) lets whoever launches it pick the directory. The runtime is built once the
//! command line is read, with the directory given or the binary's own.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use carmy_core::{Carmy, Directory, Runtime};
use clap::{Arg, Command, value_parser};

/// `command` with the flag on each subcommand that serves.
pub(super) fn add_arg(mut command: Command) -> Command {
    for serving in ["serve", "mcp", "http", "unix", "config"] {
        if command.find_subcommand(serving).is_some() {
            command = command.mut_subcommand(serving, |sub| sub.arg(arg()));
        }
    }
    command
}

fn arg() -> Arg {
    Arg::new("resource-root")
        .long("resource-root")
        .value_name("DIR")
        .value_parser(value_parser!(PathBuf))
        .help("Serve the files under DIR as resources, instead of the binary's own documents (resources.root_path)")
}

/// `carmy` with the files of `--resource-root`, or of `default_root`, as resources.
///
/// A directory named on the command line must be there: anything else is a usage error (exit
/// 2) naming it. The binary's own documents may be missing (the binary was copied without
/// them): it then serves without files, and says so once.
pub(super) fn build(
    carmy: Carmy,
    default_root: &Path,
    given: Option<&Path>,
) -> Result<Runtime, ExitCode> {
    let carmy = match given {
        Some(root) => match Directory::new(root) {
            Ok(files) => carmy.resource_provider(files),
            Err(error) => {
                eprintln!(
                    "error: resource root {}: {error} (--resource-root, resources.root_path)",
                    root.display()
                );
                return Err(ExitCode::from(2));
            }
        },
        None => match Directory::new(default_root) {
            Ok(files) => carmy.resource_provider(files),
            Err(error) => {
                tracing::warn!(
                    root = %default_root.display(),
                    %error,
                    "serving without the documents: their directory cannot be served"
                );
                carmy
            }
        },
    };
    carmy.build().map_err(|error| {
        eprintln!("error: {error}");
        ExitCode::FAILURE
    })
}
