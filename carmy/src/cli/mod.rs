//! The command line every Carmy binary gets: `serve` (and its shortcuts `mcp`, `http`, `unix`),
//! `config`, `tools`, `resources`, `prompts`, `schema`, `call`. The serving ones read one configuration (flags over
//! `CARMY_...` variables over a `--config` file over the defaults; docs/06-configuration.md).
//!
//! ```no_run
//! # use carmy::{Carmy, Runtime};
//! # fn build_runtime() -> Runtime { Carmy::new().build().unwrap() }
//! fn main() -> std::process::ExitCode {
//!     let runtime = build_runtime();
//!     carmy::cli::Cli::new(runtime)
//!         .name(env!("CARGO_PKG_NAME"))
//!         .version(env!("CARGO_PKG_VERSION"))
//!         .about("My tools, served over MCP")
//!         .main()
//! }
//! ```
//!
//! [`Cli::main`] starts the tokio runtime that fits the subcommand; [`Cli::run`] runs on one the
//! caller already has (`#[tokio::main]`).
//!
//! Exit codes: 0 on success, 1 when a called tool fails or serving stops on an error, 2 on bad
//! usage (unknown subcommand or name, arguments that are not JSON, a configuration that names an
//! unknown key or holds a bad value). Logs go to stderr (or `logging.file`), filtered by
//! `logging.level` (or `RUST_LOG`; default `warn`), one line per event whatever a client sent: control characters
//! in logged values are escaped, each value is cut at 1 KiB and each line at 4 KiB; stdout
//! carries only the command's output (the protocol, for `mcp`).

mod arguments;
mod commands;
mod config;
#[cfg(feature = "fs")]
mod files;
mod logging;
mod network;
mod offline;
mod private_file;
mod redact;
mod reload;
mod render;
mod served;
mod state_keys;
#[cfg(feature = "store")]
mod store;
mod threads;
mod tool_settings;

use std::process::ExitCode;

use clap::{ArgMatches, Command};

use carmy_core::{Context, Runtime};

use config::Transport;
use offline::{host_context, offline};
use served::Served;
use threads::Threads;

/// A Carmy binary's command line, over one runtime.
#[derive(Debug)]
#[must_use]
pub struct Cli {
    served: Served,
    context: Context,
    name: &'static str,
    version: &'static str,
    about: &'static str,
    built: Built,
}

/// What [`Cli::on_built`] was given.
#[derive(Default)]
struct Built(Option<OnBuilt>);

type OnBuilt = Box<dyn FnOnce(&Runtime) + Send>;

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl Cli {
    /// A command line for `runtime`, named after the binary and with carmy's version until
    /// [`name`](Cli::name) and [`version`](Cli::version) say otherwise.
    pub fn new(runtime: Runtime) -> Self {
        Self::serving(Served::Runtime(runtime))
    }

    /// A command line for the runtime `carmy` builds once it has added the files under a
    /// directory as resources (a [`Directory`](carmy_core::Directory)): the one given with
    /// `--resource-root DIR` (on `mcp`, `http` and `unix`), or else `default_root`, the
    /// binary's own documents, if it is there.
    ///
    /// With the `store` feature, the same subcommands take `--store <memory | PATH>` (or
    /// `CARMY_STORE`): the idempotency store is a durable SQLite file, by default
    /// `$XDG_DATA_HOME/carmy/<name>/store.sqlite` (else `~/.local/share/...`), and `memory`
    /// keeps the per-process one. The other subcommands keep the in-memory store.
    #[cfg(feature = "fs")]
    pub fn with_files(
        carmy: carmy_core::Carmy,
        default_root: impl Into<std::path::PathBuf>,
    ) -> Self {
        Self::serving(Served::Files {
            carmy: Box::new(carmy),
            default_root: default_root.into(),
        })
    }

    /// A command line for the runtime `carmy` builds once the command line is read. With the
    /// `store` feature, `mcp`, `http` and `unix` then take `--store <memory | PATH | URL>` (or
    /// `CARMY_STORE`), as for [`with_files`](Cli::with_files): one line gives any Carmy binary
    /// a durable store, or one shared by replicas on PostgreSQL or Redis. A catalog that does
    /// not build is bad usage (exit 2).
    pub fn build(carmy: carmy_core::Carmy) -> Self {
        Self::serving(Served::Builder(Box::new(carmy)))
    }

    fn serving(served: Served) -> Self {
        Self {
            served,
            context: Context::new(),
            name: "carmy",
            version: env!("CARGO_PKG_VERSION"),
            about: "Agent tools with explicit side effects, served over MCP",
            built: Built::default(),
        }
    }

    /// Calls `built` with the runtime once the command line has built it, before anything is
    /// served: to keep a handle on what changes while it serves (a tool that reveals others
    /// with [`Catalog::disable`](carmy_core::Catalog::disable), a background job reporting
    /// [resource changes](Runtime::resource_changes)).
    pub fn on_built(mut self, built: impl FnOnce(&Runtime) + Send + 'static) -> Self {
        self.built = Built(Some(Box::new(built)));
        self
    }

    /// The trusted context every call starts from; `--principal` and `--grant` add to it.
    pub fn context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }

    /// The program name shown in help and reported to MCP clients (use
    /// `env!("CARGO_PKG_NAME")`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The version shown by `--version` and reported to MCP clients (use
    /// `env!("CARGO_PKG_VERSION")`).
    pub fn version(mut self, version: &'static str) -> Self {
        self.version = version;
        self
    }

    /// One line about the program, shown in help.
    pub fn about(mut self, about: &'static str) -> Self {
        self.about = about;
        self
    }

    /// Parses `std::env::args` and runs the subcommand on a tokio runtime fit for it, for a
    /// synchronous `fn main`:
    ///
    /// - `mcp`, `serve` on stdio, `config`, `tools`, `resources`, `prompts`, `schema` and `call` run on a
    ///   current-thread runtime. A stdio server has one connection whose messages pass through
    ///   one serve loop; one thread runs it and the calls, with no hand-over between threads,
    ///   and while calls pile up every other one runs on a second thread of the session's own
    ///   ([`McpServer::call_thread`](carmy_mcp::McpServer::call_thread); measured in
    ///   `bench/README.md`: more calls per second than two worker threads, and a lone call's
    ///   latency unchanged).
    /// - `http` and `unix` serve many connections at once, on a multi-threaded runtime with a
    ///   worker per core; so does `serve` when its configuration picks one of them.
    ///
    /// `server.worker_threads` (`CARMY_SERVER__WORKER_THREADS`) sets the number of threads
    /// that serve instead: `1` is the current-thread runtime without a call thread, more is a
    /// multi-threaded one with that many workers, on any transport.
    ///
    /// A tool that blocks its thread (`std::thread::sleep`, heavy CPU) also holds up the serve
    /// loop on stdio: move such work to `tokio::task::spawn_blocking`, or call
    /// [`run`](Cli::run) from a runtime of your own. `tokio::task::block_in_place` needs a
    /// multi-threaded runtime, so it is refused (the call fails with `TOOL_PANIC`) under `mcp`.
    ///
    /// ```no_run
    /// # use carmy::{Carmy, Runtime};
    /// # fn build_runtime() -> Runtime { Carmy::new().build().unwrap() }
    /// fn main() -> std::process::ExitCode {
    ///     carmy::cli::Cli::new(build_runtime())
    ///         .name(env!("CARGO_PKG_NAME"))
    ///         .version(env!("CARGO_PKG_VERSION"))
    ///         .main()
    /// }
    /// ```
    pub fn main(self) -> ExitCode {
        self.main_from(std::env::args_os())
    }

    /// [`main`](Cli::main) over `args` (the first is the program name).
    pub fn main_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = match self.parse(args) {
            Ok(matches) => matches,
            Err(status) => return status,
        };
        // A serving subcommand's configuration also says how to run: read once, here.
        let loaded = load_config(&matches);
        let serving = matches.subcommand_name() != Some("config");
        let settings = loaded
            .as_ref()
            .and_then(|loaded| loaded.as_ref().ok())
            .filter(|_| serving);
        let transport = settings.map(|loaded| loaded.settings.server.transport);
        let threads = settings.map_or(0, |loaded| loaded.settings.server.worker_threads);
        match Threads::for_serving(transport, threads).runtime() {
            Ok(tokio) => tokio.block_on(self.dispatch(matches, loaded)),
            Err(error) => {
                eprintln!("error: cannot start the tokio runtime: {error}");
                ExitCode::FAILURE
            }
        }
    }

    /// Parses `std::env::args` and runs the subcommand, on the caller's tokio runtime.
    pub async fn run(self) -> ExitCode {
        self.run_from(std::env::args_os()).await
    }

    /// Parses `args` (the first is the program name) and runs the subcommand, on the caller's
    /// tokio runtime.
    pub async fn run_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        match self.parse(args) {
            Ok(matches) => {
                let loaded = load_config(&matches);
                self.dispatch(matches, loaded).await
            }
            Err(status) => status,
        }
    }

    /// The parsed command line, or the status to exit with once help, the version or a usage
    /// error has been printed.
    fn parse<I, T>(&self, args: I) -> Result<ArgMatches, ExitCode>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        self.command().try_get_matches_from(args).map_err(|error| {
            // Help and version go to stdout with status 0; usage errors to stderr with 2.
            let _ = error.print();
            ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2))
        })
    }

    /// Runs the subcommand; `loaded` is the configuration [`load_config`] read for it.
    async fn dispatch(
        self,
        matches: ArgMatches,
        loaded: Option<Result<config::Loaded, config::ConfigError>>,
    ) -> ExitCode {
        let (subcommand, sub) = matches.subcommand().expect("a subcommand is required");
        let Some(loaded) = loaded else {
            // `tools`, `resources`, `prompts`, `schema`, `call`: in process, no configuration.
            let _ = logging::init(&logging::from_environment());
            let context = host_context(self.context.clone(), sub);
            return match self.served.runtime(self.name, None).await {
                Ok(runtime) => {
                    if let Some(built) = self.built.0 {
                        built(&runtime);
                    }
                    offline(&runtime, context, subcommand, sub).await
                }
                Err(status) => status,
            };
        };
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        };
        if subcommand == "config" {
            let text = if sub.get_flag("keys") {
                config::reference()
            } else {
                config::print(&loaded, sub.get_flag("json"))
            };
            return commands::exit_after_printing(&text, ExitCode::SUCCESS);
        }
        let settings = loaded.settings;
        if let Err(error) = logging::init(&settings.logging) {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
        let keys = match state_keys::load(&settings) {
            Ok(keys) => keys,
            Err(status) => return status,
        };
        let context = settings_context(self.context.clone(), &settings);
        let (name, version) = (self.name, self.version);
        let runtime = match self.served.runtime(name, Some(&settings)).await {
            Ok(runtime) => runtime,
            Err(status) => return status,
        };
        runtime
            .catalog()
            .disable_as(reload::CONFIGURATION, settings.disabled());
        if let Some(built) = self.built.0 {
            built(&runtime);
        }
        #[cfg(unix)]
        let reread = matches.clone();
        #[cfg(unix)]
        reload::on_hangup(
            move || {
                let (subcommand, sub) = reread.subcommand().expect("a subcommand is required");
                config::load(sub, implied(subcommand), std::env::vars_os())
                    .map(|loaded| loaded.settings)
            },
            settings.clone(),
            runtime.clone(),
        );
        let server = carmy_mcp::McpServer::new(runtime)
            .context(context)
            .server_info(
                settings.server.name.as_deref().unwrap_or(name),
                settings.server.version.as_deref().unwrap_or(version),
            )
            .confirm_via_client(settings.security.confirm_via_client);
        let server = match keys {
            Some(keys) => server.state_keys(keys),
            None => server,
        };
        match settings.server.transport {
            Transport::Stdio => {
                let server = if settings.server.worker_threads == 1 {
                    // One thread, the calls included.
                    server.call_thread(carmy_mcp::CallThread::Off)
                } else {
                    server
                };
                commands::mcp(server).await
            }
            #[cfg(feature = "http")]
            Transport::Http | Transport::Sse => network::http(server, &settings).await,
            #[cfg(unix)]
            Transport::Unix => network::unix(server, &settings).await,
            #[allow(unreachable_patterns)]
            other => {
                eprintln!(
                    "error: server.transport = {:?}: this binary cannot serve it{}",
                    other.as_str(),
                    if cfg!(feature = "http") {
                        ""
                    } else {
                        " (built without carmy's `http` feature)"
                    }
                );
                ExitCode::from(2)
            }
        }
    }

    /// The command line clap reads, subcommands and flags.
    fn command(&self) -> Command {
        arguments::command(self.name, self.version, self.about, &self.served)
    }
}

/// The configuration of a serving subcommand (and of `config`), as the command line, the
/// environment and the file it names say; `None` for the subcommands that run in process.
fn load_config(matches: &ArgMatches) -> Option<Result<config::Loaded, config::ConfigError>> {
    let (subcommand, sub) = matches.subcommand()?;
    let implied = match subcommand {
        "serve" | "config" => None,
        other => Some(implied(other)?),
    };
    Some(config::load(sub, implied, std::env::vars_os()))
}

/// The transport a shortcut subcommand implies (`mcp`: stdio); `None` for the others.
fn implied(subcommand: &str) -> Option<Transport> {
    match subcommand {
        "mcp" => Some(Transport::Stdio),
        "http" => Some(Transport::Http),
        "unix" => Some(Transport::Unix),
        _ => None,
    }
}

/// The trusted context of every call: `context` with the principal and grants configured.
fn settings_context(mut context: Context, settings: &config::Settings) -> Context {
    let security = &settings.security;
    if let Some(access) = settings.tool_settings.access() {
        context = context.with_access(access);
    }
    if !security.grants.is_empty() {
        context = context.with_grants(security.grants.iter().cloned());
    }
    if let Some(principal) = &security.principal {
        context = context.with_principal(principal.as_str());
    }
    context
}
