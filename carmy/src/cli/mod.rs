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

mod commands;
mod config;
#[cfg(feature = "fs")]
mod files;
mod logging;
mod network;
mod redact;
mod render;
#[cfg(feature = "store")]
mod store;
mod threads;
mod tool_settings;

use std::process::ExitCode;

use clap::{Arg, ArgAction, ArgMatches, Command};

use carmy_core::{Context, Runtime};

use config::Transport;
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
        }
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
            return match self.runtime(None).await {
                Ok(runtime) => offline(&runtime, context, subcommand, sub).await,
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
        let context = settings_context(self.context.clone(), &settings);
        let (name, version) = (self.name, self.version);
        let runtime = match self.runtime(Some(&settings)).await {
            Ok(runtime) => runtime,
            Err(status) => return status,
        };
        let server = carmy_mcp::McpServer::new(runtime)
            .context(context)
            .server_info(
                settings.server.name.as_deref().unwrap_or(name),
                settings.server.version.as_deref().unwrap_or(version),
            );
        match settings.server.transport {
            Transport::Stdio => {
                let mut server = server.confirm_via_client(settings.security.confirm_via_client);
                if settings.server.worker_threads == 1 {
                    // One thread, the calls included.
                    server = server.call_thread(carmy_mcp::CallThread::Off);
                }
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

    /// The runtime: the one given, or the one built with the store and the resource directory
    /// `settings` name (a serving subcommand), or the in-memory store and the binary's own
    /// documents (the others).
    async fn runtime(self, settings: Option<&config::Settings>) -> Result<Runtime, ExitCode> {
        let name = self.name;
        let configured = |carmy: carmy_core::Carmy| match settings {
            Some(settings) => tool_settings::apply(carmy, &settings.tool_settings),
            None => carmy,
        };
        match self.served {
            Served::Runtime(runtime) => match settings.and_then(tool_settings::refused_on_built) {
                Some(refused) => {
                    eprintln!("error: {refused}");
                    Err(ExitCode::from(2))
                }
                None => Ok(runtime),
            },
            Served::Builder(carmy) => {
                let carmy = with_store(configured(*carmy), name, settings).await?;
                carmy.build().map_err(|error| {
                    eprintln!("error: {error}");
                    ExitCode::from(2)
                })
            }
            #[cfg(feature = "fs")]
            Served::Files {
                carmy,
                default_root,
            } => {
                let carmy = with_store(configured(*carmy), name, settings).await?;
                let root = settings.and_then(|settings| settings.resources.root_path.as_deref());
                files::build(carmy, &default_root, root)
            }
        }
    }

    fn command(&self) -> Command {
        let grants = || {
            [
                Arg::new("grant")
                    .long("grant")
                    .value_name("GRANT")
                    .action(ArgAction::Append)
                    .help("Grant a permission to every call, e.g. `confirm:cancel_order`"),
                Arg::new("principal")
                    .long("principal")
                    .value_name("NAME")
                    .help("Name the caller (idempotency keys are scoped by principal)"),
            ]
        };
        let mcp = Command::new("mcp")
            .about("Serve the tools over MCP on stdin/stdout")
            .args(grants())
            .arg(
                Arg::new("confirm-via-client")
                    .long("confirm-via-client")
                    .action(ArgAction::SetTrue)
                    .help(
                        "Ask the client's user to approve each call that needs confirmation \
                         the host did not grant (MCP elicitation)",
                    ),
            );
        let json = || {
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print the list as JSON")
        };
        let tools = Command::new("tools").about("List the tools").arg(json());
        let resources = Command::new("resources")
            .about("List the resources and resource templates, served files included")
            .arg(json());
        let prompts = Command::new("prompts")
            .about("List the prompts and their arguments")
            .arg(json());
        let schema = Command::new("schema")
            .about(
                "Print a tool's input and output schemas, or a resource template's or a prompt's \
                 input schema",
            )
            .arg(
                Arg::new("name")
                    .required(true)
                    .help("The tool's, resource's or prompt's name (or a resource's URI)"),
            )
            .arg(
                Arg::new("kind")
                    .long("kind")
                    .value_name("KIND")
                    .value_parser(["tool", "resource", "prompt"])
                    .help("Look only among the tools, the resources or the prompts"),
            );
        let call = Command::new("call")
            .about("Run one call in process and print its outcome as JSON")
            .arg(Arg::new("tool").required(true).help("The tool's name"))
            .arg(
                Arg::new("arguments")
                    .default_value("{}")
                    .help("The arguments, as a JSON object"),
            )
            .arg(
                Arg::new("request-id")
                    .long("request-id")
                    .value_name("ID")
                    .help("Make the call idempotent under this request id"),
            )
            .args(grants());
        let serve = Command::new("serve")
            .about("Serve the tools over the transport the configuration picks (stdio by default)")
            .args(serve_args())
            .args(grants());
        let config = Command::new("config")
            .about("Print the effective configuration and where each value came from")
            .args(serve_args())
            .args(grants())
            .arg(
                Arg::new("json")
                    .long("json")
                    .action(ArgAction::SetTrue)
                    .help("Print it as JSON: a list of {key, value, from}"),
            )
            .arg(
                Arg::new("keys")
                    .long("keys")
                    .action(ArgAction::SetTrue)
                    .help("Print every key, its default, variable and flags, as a Markdown table"),
            );
        let mut command = Command::new(self.name)
            .version(self.version)
            .about(self.about)
            .subcommand_required(true)
            .arg_required_else_help(true)
            .subcommands([serve, mcp])
            .subcommands(network::commands(grants))
            .subcommands([config, tools, resources, prompts, schema, call]);
        // Every serving shortcut reads the configuration too.
        for serving in ["mcp", "http", "unix"] {
            if command.find_subcommand(serving).is_some() {
                command = command
                    .mut_subcommand(serving, |sub| sub.arg(config_arg()).arg(log_level_arg()));
            }
        }
        #[cfg(feature = "fs")]
        let command = match self.served {
            Served::Files { .. } => files::add_arg(command),
            Served::Runtime(_) | Served::Builder(_) => command,
        };
        // Only a runtime built here can be given a store; `Cli::new`'s keeps its own.
        #[cfg(feature = "store")]
        let command = match self.served {
            Served::Files { .. } | Served::Builder(_) => store::add_arg(command, self.name),
            Served::Runtime(_) => command,
        };
        command
    }
}

/// `--config FILE`.
fn config_arg() -> Arg {
    Arg::new("config")
        .long("config")
        .short('c')
        .value_name("FILE")
        .help(format!(
            "Read the configuration from FILE (TOML, YAML or JSON, by extension) \
             [env: {}]",
            config::CONFIG_ENV
        ))
}

/// `-l LEVEL`.
fn log_level_arg() -> Arg {
    Arg::new("log-level")
        .long("log-level")
        .short('l')
        .value_name("LEVEL")
        .help("Log at LEVEL (error, warn, info, debug, trace) or by filter directives (logging.level) [default: warn]")
}

/// The configuration of a serving subcommand (and of `config`), as the command line, the
/// environment and the file it names say; `None` for the subcommands that run in process.
fn load_config(matches: &ArgMatches) -> Option<Result<config::Loaded, config::ConfigError>> {
    let (subcommand, sub) = matches.subcommand()?;
    let implied = match subcommand {
        "mcp" => Some(Transport::Stdio),
        "http" => Some(Transport::Http),
        "unix" => Some(Transport::Unix),
        "serve" | "config" => None,
        _ => return None,
    };
    Some(config::load(sub, implied, std::env::vars_os()))
}

/// What `serve` and `config` take beside the host context: the keys one most often changes.
fn serve_args() -> [Arg; 5] {
    [
        config_arg(),
        Arg::new("transport")
            .long("transport")
            .short('t')
            .value_name("TRANSPORT")
            .value_parser(["stdio", "http", "sse", "unix"])
            .help("stdio, http, sse (HTTP with the legacy HTTP+SSE endpoints) or unix (server.transport) [default: stdio]"),
        Arg::new("host")
            .long("host")
            .value_name("HOST")
            .help("The HTTP address to listen on (server.host) [default: 127.0.0.1]"),
        Arg::new("port")
            .long("port")
            .short('p')
            .value_name("PORT")
            .value_parser(clap::value_parser!(u16))
            .help("The HTTP port; 0 picks a free one (server.port) [default: 8080]"),
        log_level_arg(),
    ]
}

/// What the command line serves: a runtime, or one it builds once it has read the flags that
/// shape it.
#[derive(Debug)]
enum Served {
    Runtime(Runtime),
    /// Boxed: a builder is large beside a runtime, which is a handle.
    Builder(Box<carmy_core::Carmy>),
    #[cfg(feature = "fs")]
    Files {
        /// Boxed: a builder is large beside a runtime, which is a handle.
        carmy: Box<carmy_core::Carmy>,
        default_root: std::path::PathBuf,
    },
}

fn string<'a>(matches: &'a ArgMatches, id: &str) -> &'a str {
    matches
        .get_one::<String>(id)
        .map(String::as_str)
        .unwrap_or_default()
}

/// `carmy` with the store `settings` name, when serving (feature `store`).
async fn with_store(
    carmy: carmy_core::Carmy,
    name: &str,
    settings: Option<&config::Settings>,
) -> Result<carmy_core::Carmy, ExitCode> {
    #[cfg(feature = "store")]
    if let Some(settings) = settings {
        return store::apply(
            carmy,
            name,
            settings.store.as_deref(),
            &settings.request_ids,
        )
        .await;
    }
    // Without the feature the runtime keeps the store it was built with: bounds meant for the
    // command line's store are refused rather than ignored.
    if let Some((key, _)) =
        settings.and_then(|settings| settings.request_ids.set().first().copied())
    {
        eprintln!(
            "error: {key} cannot apply: this binary keeps the store it was built with (carmy's \
             `store` feature lets the command line choose and bound it)"
        );
        return Err(ExitCode::from(2));
    }
    let _ = name;
    Ok(carmy)
}

/// `tools`, `resources`, `prompts`, `schema` and `call`.
async fn offline(
    runtime: &Runtime,
    context: Context,
    subcommand: &str,
    sub: &ArgMatches,
) -> ExitCode {
    match subcommand {
        "tools" => commands::tools(runtime, sub.get_flag("json")),
        "resources" => commands::resources(runtime, sub.get_flag("json")).await,
        "prompts" => commands::prompts(runtime, sub.get_flag("json")),
        "schema" => commands::schema(
            runtime,
            string(sub, "name"),
            sub.get_one::<String>("kind").map(String::as_str),
        ),
        "call" => {
            commands::call(
                runtime,
                context,
                string(sub, "tool"),
                string(sub, "arguments"),
                sub.get_one::<String>("request-id").map(String::as_str),
            )
            .await
        }
        other => unreachable!("unknown subcommand {other}"),
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

/// The context of `call`: `context` with its `--grant` and `--principal`.
fn host_context(mut context: Context, matches: &ArgMatches) -> Context {
    let has = |id: &str| matches.try_get_raw(id).is_ok_and(|raw| raw.is_some());
    if has("grant") {
        context = context.with_grants(
            matches
                .get_many::<String>("grant")
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    if has("principal")
        && let Some(principal) = matches.get_one::<String>("principal")
    {
        context = context.with_principal(principal.as_str());
    }
    context
}
