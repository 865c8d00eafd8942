//! One record per contender per run (a JSON line), and the markdown summary of medians.

use std::fmt::Write as _;

use serde::Serialize;

use crate::{cli::Options, stats::median};

/// What one run of one contender measured. Fields stay `None` past the step that failed.
#[derive(Debug, Default, Serialize)]
pub(crate) struct RunRecord {
    pub(crate) contender: String,
    pub(crate) run: usize,
    pub(crate) command: String,
    pub(crate) ok: bool,
    pub(crate) error: Option<String>,
    /// The median of `cold_starts` timed starts: spawn → `initialize` answered.
    pub(crate) cold_start_ms: Option<f64>,
    pub(crate) cold_starts: usize,
    pub(crate) seq_calls: Option<usize>,
    pub(crate) seq_p50_us: Option<f64>,
    pub(crate) seq_p95_us: Option<f64>,
    pub(crate) seq_p99_us: Option<f64>,
    pub(crate) seq_mean_us: Option<f64>,
    /// The server's CPU time (user + system, every thread) over the sequential calls.
    pub(crate) seq_cpu_s: Option<f64>,
    /// `seq_cpu_s` per call answered, in µs.
    pub(crate) seq_cpu_us_per_call: Option<f64>,
    /// `seq_cpu_s` over the phase's wall time: the cores the server kept busy.
    pub(crate) seq_cores: Option<f64>,
    /// `seq_cpu_s` is the threads' nanoseconds (schedstat), not 10 ms ticks (stat).
    pub(crate) seq_cpu_exact: Option<bool>,
    pub(crate) load_concurrency: Option<usize>,
    pub(crate) load_seconds: Option<f64>,
    pub(crate) load_calls: Option<usize>,
    pub(crate) load_calls_per_s: Option<f64>,
    pub(crate) load_p50_us: Option<f64>,
    pub(crate) load_p95_us: Option<f64>,
    pub(crate) load_p99_us: Option<f64>,
    /// The server's CPU time (user + system, every thread) over the concurrent phase.
    pub(crate) load_cpu_s: Option<f64>,
    /// `load_cpu_s` per call answered, in µs.
    pub(crate) load_cpu_us_per_call: Option<f64>,
    /// `load_cpu_s` over the phase's wall time: the cores the server kept busy.
    pub(crate) load_cores: Option<f64>,
    /// `load_cpu_s` is the threads' nanoseconds (schedstat), not 10 ms ticks (stat).
    pub(crate) load_cpu_exact: Option<bool>,
    /// The same for the driver itself, which shares the machine.
    pub(crate) load_driver_cores: Option<f64>,
    pub(crate) errors: usize,
    pub(crate) peak_rss_kib: Option<u64>,
    /// How long the run waited for other builds (rustc, cc, ld) to finish before starting.
    pub(crate) waited_for_builds_s: f64,
    /// A build was running at the start (after the wait) or at the end: figures are suspect.
    pub(crate) builds_during_run: bool,
    pub(crate) unix_time: u64,
}

/// The summary table: the median of each figure over the runs that passed.
pub(crate) fn markdown(options: &Options, records: &[RunRecord]) -> String {
    let mut out = String::new();
    let c = options.concurrency;
    writeln!(
        out,
        "| contender | runs used/ok/all | cold start (ms) | seq p50 (µs) | seq p95 (µs) | seq p99 (µs) \
         | seq CPU/call (µs) | {c}× calls/s | {c}× p50 (µs) | {c}× p95 (µs) | {c}× p99 (µs) \
         | {c}× CPU/call (µs) | {c}× cores | peak RSS (MiB) |"
    )
    .unwrap();
    out.push_str("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    let mut notes = Vec::new();
    let mut noisy_contenders = Vec::new();
    for contender in &options.contenders {
        let runs: Vec<&RunRecord> = records
            .iter()
            .filter(|r| r.contender == contender.name)
            .collect();
        let ok: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.ok).collect();
        // Runs during which a compiler was seen are only used when no run was quiet.
        let quiet: Vec<&RunRecord> = ok
            .iter()
            .copied()
            .filter(|r| !r.builds_during_run)
            .collect();
        let (used, mark) = if quiet.is_empty() && !ok.is_empty() {
            noisy_contenders.push(contender.name.as_str());
            (ok.clone(), " ⚠")
        } else {
            (quiet, "")
        };
        let figure = |get: fn(&RunRecord) -> Option<f64>, decimals: usize| {
            median(used.iter().filter_map(|r| get(r)).collect())
                .map_or("–".to_owned(), |v| group(v, decimals))
        };
        writeln!(
            out,
            "| {}{mark} | {}/{}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            contender.name,
            used.len(),
            ok.len(),
            runs.len(),
            figure(|r| r.cold_start_ms, 1),
            figure(|r| r.seq_p50_us, 0),
            figure(|r| r.seq_p95_us, 0),
            figure(|r| r.seq_p99_us, 0),
            figure(|r| r.seq_cpu_us_per_call, 1),
            figure(|r| r.load_calls_per_s, 0),
            figure(|r| r.load_p50_us, 0),
            figure(|r| r.load_p95_us, 0),
            figure(|r| r.load_p99_us, 0),
            figure(|r| r.load_cpu_us_per_call, 1),
            figure(|r| r.load_cores, 2),
            figure(|r| r.peak_rss_kib.map(|k| k as f64 / 1024.0), 1),
        )
        .unwrap();
        for failed in runs.iter().filter(|r| !r.ok) {
            let why = failed.error.as_deref().unwrap_or("errors in the answers");
            let first_line = why.lines().next().unwrap_or_default();
            notes.push(format!(
                "- `{}` run {} failed: {first_line}",
                failed.contender, failed.run
            ));
        }
    }
    writeln!(
        out,
        "\nMedians over the runs used: those that passed while no compiler ran on the machine \
         (a background thread scans /proc for rustc, cc, ld twice a second). Each run is a fresh process: cold start is spawn → \
         `initialize` answered, the median of {} starts per run; then {} warm-up calls and {} sequential {}; \
         then {c} concurrent callers pipelined over \
         the one stdio connection for {} s. CPU/call is the server's CPU time over a phase (the sum \
         of its threads' /proc/<pid>/task/<tid>/schedstat, or user + system ticks from \
         /proc/<pid>/stat when a thread exited) divided by the calls answered; cores is that CPU \
         time over the phase's wall time. Peak RSS is VmHWM just before shutdown.",
        options.cold_starts,
        options.warmup,
        options.calls,
        requests(options),
        options.duration.as_secs_f64()
    )
    .unwrap();
    if !noisy_contenders.is_empty() {
        notes.push(format!(
            "- ⚠ no quiet run for {}: the figures are medians of runs during which other builds \
             shared the 2 cores, so they understate it",
            noisy_contenders.join(", ")
        ));
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    out
}

/// The request every contender was sent, or each contender's.
fn requests(options: &Options) -> String {
    let first = &options.contenders[0].workload;
    if options.contenders.iter().all(|c| c.workload == *first) {
        return first.describe();
    }
    let each: Vec<String> = options
        .contenders
        .iter()
        .map(|c| format!("{} to `{}`", c.workload.describe(), c.name))
        .collect();
    format!("requests ({})", each.join(", "))
}

/// `12345.6` → `12,346` (or with decimals), so wide tables stay readable.
fn group(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    if frac.is_empty() {
        grouped
    } else {
        format!("{grouped}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(run: usize, calls_per_s: f64, noisy: bool) -> RunRecord {
        RunRecord {
            contender: "a".into(),
            run,
            ok: true,
            load_calls_per_s: Some(calls_per_s),
            builds_during_run: noisy,
            ..RunRecord::default()
        }
    }

    fn options() -> Options {
        crate::cli::parse(["--contender".to_owned(), "a=server".to_owned()])
            .unwrap()
            .unwrap()
    }

    #[test]
    fn quiet_runs_are_preferred() {
        let table = markdown(
            &options(),
            &[record(1, 100.0, true), record(2, 300.0, false)],
        );
        assert!(table.contains("| a | 1/2/2 |"), "{table}");
        assert!(table.contains("| 300 |"), "{table}");
        assert!(!table.contains('⚠'), "{table}");
    }

    #[test]
    fn noisy_runs_are_used_and_flagged_when_nothing_else() {
        let table = markdown(
            &options(),
            &[record(1, 100.0, true), record(2, 300.0, true)],
        );
        assert!(table.contains("| a ⚠ | 2/2/2 |"), "{table}");
        assert!(table.contains("| 200 |"), "{table}");
    }

    #[test]
    fn cpu_columns_sit_beside_their_phase() {
        let mut run = record(1, 100.0, false);
        run.seq_cpu_us_per_call = Some(30.0);
        run.load_cpu_us_per_call = Some(42.4);
        run.load_cores = Some(0.9);
        let table = markdown(&options(), &[run]);
        assert!(
            table.contains("| 30.0 | 100 | – | – | – | 42.4 | 0.90 | – |"),
            "{table}"
        );
        let header = table.lines().next().unwrap();
        let rule = table.lines().nth(1).unwrap();
        assert_eq!(header.matches('|').count(), rule.matches('|').count());
    }

    #[test]
    fn grouping() {
        assert_eq!(group(12345.6, 0), "12,346");
        assert_eq!(group(999.0, 0), "999");
        assert_eq!(group(1234.56, 1), "1,234.6");
        assert_eq!(group(3.25, 1), "3.2");
    }
}
