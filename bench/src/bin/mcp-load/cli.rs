//! Command-line options of `mcp-load`.

use std::{path::PathBuf, time::Duration};

use crate::workload::Workload;

pub(crate) const USAGE: &str = "\
mcp-load: measure stdio MCP servers, each the same way, each run a fresh process.

USAGE:
    mcp-load [OPTIONS] --contender NAME='COMMAND ARGS' [--contender ...]

OPTIONS:
    --contender NAME=CMD   a server to measure; CMD is split like a shell would (no expansion)
    --workload W           what the contenders named after it are sent: `search` (default) or
                           `read:URI` (`resources/read`); one run can compare several
    --runs N               fresh processes per contender, interleaved (default 5)
    --warmup N             sequential calls before measuring (default 500)
    --calls N              measured sequential calls (default 5000)
    --cold-starts N        starts timed per run, the median reported (default 10)
    --concurrency N        concurrent callers over the one connection (default 32)
    --duration SECS        length of the concurrent phase (default 10)
    --quick                smoke test: 1 run, 3 starts, 50 warm-up, 500 calls, 2 s of load
    --wait-for-builds SECS before each run, wait up to SECS while rustc/cc/ld run (default 600)
    --jsonl PATH           append one JSON line per contender per run to PATH
    --markdown PATH        write the summary table to PATH
    -h, --help             this text

By default every server is sent `search_products {\"query\":\"mouse\"}` and must answer 4
products; a read must answer contents for its URI.";

/// One server to measure.
#[derive(Debug, Clone)]
pub(crate) struct Contender {
    pub(crate) name: String,
    pub(crate) argv: Vec<String>,
    /// The request it is sent.
    pub(crate) workload: Workload,
}

/// What to run and how much.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) contenders: Vec<Contender>,
    pub(crate) runs: usize,
    pub(crate) warmup: usize,
    pub(crate) calls: usize,
    /// Spawn → `initialize` answered, timed this many times per run (fresh processes).
    pub(crate) cold_starts: usize,
    pub(crate) concurrency: usize,
    pub(crate) duration: Duration,
    pub(crate) wait_for_builds: Duration,
    pub(crate) jsonl: Option<PathBuf>,
    pub(crate) markdown: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            contenders: Vec::new(),
            runs: 5,
            warmup: 500,
            calls: 5000,
            cold_starts: 10,
            concurrency: 32,
            duration: Duration::from_secs(10),
            wait_for_builds: Duration::from_secs(600),
            jsonl: None,
            markdown: None,
        }
    }
}

/// `Ok(None)` means help was asked for.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Options>, String> {
    let mut options = Options::default();
    let mut quick = false;
    let mut explicit = Explicit::default();
    let mut workload = Workload::Search;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.into())),
            _ => (arg, None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--quick" => quick = true,
            "--contender" => {
                options
                    .contenders
                    .push(contender(&value("--contender")?, &workload)?);
            }
            "--workload" => workload = Workload::parse(&value(&flag)?)?,
            "--runs" => {
                options.runs = number(&flag, &value(&flag)?)?;
                explicit.runs = true;
            }
            "--warmup" => {
                options.warmup = number(&flag, &value(&flag)?)?;
                explicit.warmup = true;
            }
            "--calls" => {
                options.calls = number(&flag, &value(&flag)?)?;
                explicit.calls = true;
            }
            "--cold-starts" => {
                options.cold_starts = number(&flag, &value(&flag)?)?;
                explicit.cold_starts = true;
            }
            "--concurrency" => options.concurrency = number(&flag, &value(&flag)?)?,
            "--duration" => {
                let secs: f64 = value(&flag)?
                    .parse()
                    .map_err(|_| format!("{flag} takes seconds"))?;
                options.duration = Duration::from_secs_f64(secs);
                explicit.duration = true;
            }
            "--wait-for-builds" => {
                options.wait_for_builds =
                    Duration::from_secs(number(&flag, &value(&flag)?)? as u64);
            }
            "--jsonl" => options.jsonl = Some(value(&flag)?.into()),
            "--markdown" => options.markdown = Some(value(&flag)?.into()),
            other => return Err(format!("unknown option `{other}`; see --help")),
        }
    }
    if quick {
        // Explicit values win over --quick, so `--quick --runs 2` does two short runs.
        if !explicit.runs {
            options.runs = 1;
        }
        if !explicit.warmup {
            options.warmup = 50;
        }
        if !explicit.calls {
            options.calls = 500;
        }
        if !explicit.cold_starts {
            options.cold_starts = 3;
        }
        if !explicit.duration {
            options.duration = Duration::from_secs(2);
        }
    }
    if options.contenders.is_empty() {
        return Err("no --contender given; see --help".into());
    }
    if options.runs == 0
        || options.calls == 0
        || options.cold_starts == 0
        || options.concurrency == 0
    {
        return Err("--runs, --calls, --cold-starts and --concurrency must be at least 1".into());
    }
    Ok(Some(options))
}

#[derive(Default)]
struct Explicit {
    runs: bool,
    warmup: bool,
    cold_starts: bool,
    calls: bool,
    duration: bool,
}

fn number(flag: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} takes a whole number, not `{value}`"))
}

fn contender(spec: &str, workload: &Workload) -> Result<Contender, String> {
    let (name, command) = spec
        .split_once('=')
        .ok_or_else(|| format!("--contender takes NAME=COMMAND, not `{spec}`"))?;
    let argv = shlex::split(command)
        .filter(|argv| !argv.is_empty())
        .ok_or_else(|| format!("cannot split the command of `{name}`: `{command}`"))?;
    Ok(Contender {
        name: name.trim().to_owned(),
        argv,
        workload: workload.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn contenders_are_split_like_a_shell() {
        let options = parse(args(&[
            "--contender",
            "py=python3 'my server.py' --x",
            "--runs=3",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(options.runs, 3);
        assert_eq!(options.contenders[0].name, "py");
        assert_eq!(
            options.contenders[0].argv,
            ["python3", "my server.py", "--x"]
        );
    }

    #[test]
    fn a_workload_applies_to_the_contenders_named_after_it() {
        let options = parse(args(&[
            "--contender",
            "a=server",
            "--workload",
            "read:shop://catalog",
            "--contender",
            "b=server",
            "--contender",
            "c=server",
            "--workload=search",
            "--contender",
            "d=server",
        ]))
        .unwrap()
        .unwrap();
        let read = Workload::Read("shop://catalog".into());
        let workloads: Vec<&Workload> = options.contenders.iter().map(|c| &c.workload).collect();
        assert_eq!(
            workloads,
            [&Workload::Search, &read, &read, &Workload::Search]
        );
        assert!(parse(args(&["--workload", "bogus", "--contender", "a=b"])).is_err());
    }

    #[test]
    fn quick_keeps_explicit_values() {
        let options = parse(args(&["--quick", "--runs", "2", "--contender", "a=b"]))
            .unwrap()
            .unwrap();
        assert_eq!(options.runs, 2);
        assert_eq!(options.calls, 500);
        assert_eq!(options.cold_starts, 3);
        let options = parse(args(&["--cold-starts=7", "--quick", "--contender", "a=b"]))
            .unwrap()
            .unwrap();
        assert_eq!(options.cold_starts, 7);
        assert_eq!(options.duration, Duration::from_secs(2));
    }

    #[test]
    fn mistakes_are_reported() {
        assert!(parse(args(&["--runs", "3"])).is_err());
        assert!(parse(args(&["--contender", "nocommand"])).is_err());
        assert!(parse(args(&["--bogus"])).is_err());
        assert!(parse(args(&["--cold-starts", "0", "--contender", "a=b"])).is_err());
        assert!(parse(args(&["--help"])).unwrap().is_none());
    }
}
