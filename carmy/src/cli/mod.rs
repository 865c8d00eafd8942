//! The command line every Carmy binary gets: `mcp`, `tools`, `schema`, `call`.
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
//! usage (unknown subcommand or tool, arguments that are not JSON). Logs go to stderr, filtered
//! by `RUST_LOG` (default `warn`), one line per event whatever a client sent: control characters
//! in logged values are escaped, each value is cut at 1 KiB and each line at 4 KiB; stdout
//! carries only the command's output (the protocol, for `mcp`).

mod commands;
#[cfg(feature = "fs")]
mod files;
mod logging;
mod network;
mod render;
#[cfg(feature = "store")]
mod store;

use std::process::ExitCode;

use clap::{Arg, ArgAction, ArgMatches, Command};

use carmy_core::{Context, Runtime};

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
    /// - `mcp`, `tools`, `schema` and `call` run on a current-thread runtime. A stdio server has
    ///   one connection whose messages pass through one serve loop; one thread runs it and the
    ///   executions with no hand-over between threads (measured in `bench/README.md`: about 15%
    ///   more calls per second, a third lower latency than two worker threads).
    /// - `http` and `unix` serve many connections at once, on a multi-threaded runtime.
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
        let mut builder = match matches.subcommand_name() {
            Some("http" | "unix") => tokio::runtime::Builder::new_multi_thread(),
            _ => tokio::runtime::Builder::new_current_thread(),
        };
        match builder.enable_all().build() {
            Ok(tokio) => tokio.block_on(self.dispatch(matches)),
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
            Ok(matches) => self.dispatch(matches).await,
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

    async fn dispatch(self, matches: ArgMatches) -> ExitCode {
        logging::init();
        let (subcommand, sub) = matches.subcommand().expect("a subcommand is required");
        let context = host_context(self.context.clone(), sub);
        let runtime = match self.served {
            Served::Runtime(runtime) => runtime,
            Served::Builder(carmy) => {
                #[cfg(feature = "store")]
                let carmy = match store::apply(*carmy, self.name, sub).await {
                    Ok(carmy) => Box::new(carmy),
                    Err(status) => return status,
                };
                match carmy.build() {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        eprintln!("error: {error}");
                        return ExitCode::from(2);
                    }
                }
            }
            #[cfg(feature = "fs")]
            Served::Files {
                carmy,
                default_root,
            } => {
                #[cfg(feature = "store")]
                let carmy = match store::apply(*carmy, self.name, sub).await {
                    Ok(carmy) => Box::new(carmy),
                    Err(status) => return status,
                };
                match files::build(*carmy, &default_root, sub) {
                    Ok(runtime) => runtime,
                    Err(status) => return status,
                }
            }
        };
        match subcommand {
            "mcp" => {
                let confirm_via_client = sub.get_flag("confirm-via-client");
                commands::mcp(
                    runtime,
                    context,
                    self.name,
                    self.version,
                    confirm_via_client,
                )
                .await
            }
            #[cfg(feature = "http")]
            "http" => network::http(runtime, context, self.name, self.version, sub).await,
            #[cfg(all(feature = "mcp", unix))]
            "unix" => network::unix(runtime, context, self.name, self.version, sub).await,
            "tools" => commands::tools(&runtime, sub.get_flag("json")),
            "schema" => commands::schema(&runtime, string(sub, "tool")),
            "call" => {
                commands::call(
                    &runtime,
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
        let tools = Command::new("tools").about("List the tools").arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print the catalog as JSON"),
        );
        let schema = Command::new("schema")
            .about("Print a tool's input and output schemas")
            .arg(Arg::new("tool").required(true).help("The tool's name"));
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
        let command = Command::new(self.name)
            .version(self.version)
            .about(self.about)
            .subcommand_required(true)
            .arg_required_else_help(true)
            .subcommands([mcp, tools, schema, call]);
        #[cfg(feature = "mcp")]
        let command = command.subcommands(network::commands(grants));
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
