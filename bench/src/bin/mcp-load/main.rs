//! `mcp-load`: starts stdio MCP servers and measures them, each the same way, each run a
//! fresh process; prints a JSON line per contender per run and a markdown table of medians.
//!
//! ```text
//! mcp-load --runs 5 --contender handler='target/release/bench-rmcp-handler' \
//!          --contender py='bench/.venv/bin/python bench/servers/python_server.py'
//! ```

mod check;
mod cli;
mod cpu;
mod load;
mod quiet;
mod report;
mod server;
mod stats;
mod workload;

use std::{
    fs::OpenOptions,
    io::Write as _,
    process::ExitCode,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde_json::json;

use crate::{
    cli::{Contender, Options},
    load::{FIRST_ID, Measured, Stop},
    report::RunRecord,
    server::Server,
    stats::percentile,
    workload::Workload,
};

fn main() -> ExitCode {
    let options = match cli::parse(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("mcp-load: {message}");
            return ExitCode::from(2);
        }
    };
    // One thread: the driver shares the cores with the server it measures.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let records = runtime.block_on(run_all(&options));
    let table = report::markdown(&options, &records);
    println!("\n{table}");
    if let Some(path) = &options.markdown
        && let Err(e) = std::fs::write(path, &table)
    {
        eprintln!("mcp-load: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    if records.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Interleaved: run 1 of every contender, then run 2 of every contender, and so on, so a
/// slow drift of the machine spreads over all of them.
async fn run_all(options: &Options) -> Vec<RunRecord> {
    let mut records = Vec::new();
    for run in 1..=options.runs {
        for contender in &options.contenders {
            let record = run_once(options, contender, run).await;
            eprintln!("{}", progress(options, &record));
            let line = serde_json::to_string(&record).expect("a record serializes");
            println!("{line}");
            if let Some(path) = &options.jsonl {
                let appended = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut file| writeln!(file, "{line}"));
                if let Err(e) = appended {
                    eprintln!("mcp-load: cannot append to {}: {e}", path.display());
                }
            }
            records.push(record);
            // Let the previous process's exit and page-cache work settle.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    records
}

async fn run_once(options: &Options, contender: &Contender, run: usize) -> RunRecord {
    let (waited, quiet) = quiet::wait_for_quiet(options.wait_for_builds).await;
    let mut record = RunRecord {
        waited_for_builds_s: (waited.as_secs_f64() * 10.0).round() / 10.0,
        builds_during_run: !quiet,
        contender: contender.name.clone(),
        run,
        command: shlex::try_join(contender.argv.iter().map(String::as_str))
            .unwrap_or_else(|_| contender.argv.join(" ")),
        unix_time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        ..RunRecord::default()
    };
    let watch = quiet::Watch::start();
    // One start is too noisy a sample (a page fault more or less is 10%): time a few, each a
    // fresh process, and keep the last one running for the load.
    let mut cold_starts = Vec::with_capacity(options.cold_starts);
    let mut server = None;
    for start in 1..=options.cold_starts {
        match Server::start(contender).await {
            Ok((started, elapsed)) => {
                cold_starts.push(elapsed.as_secs_f64() * 1e3);
                if start < options.cold_starts {
                    started.shutdown().await;
                } else {
                    server = Some(started);
                }
            }
            Err(e) => {
                record.error = Some(e);
                record.builds_during_run |= watch.finish();
                return record;
            }
        }
    }
    let mut server = server.expect("at least one start");
    record.cold_starts = cold_starts.len();
    record.cold_start_ms = stats::median(cold_starts);
    let outcome = measure(options, &contender.workload, &mut server, &mut record).await;
    record.peak_rss_kib = server.peak_rss_kib();
    server.shutdown().await;
    record.builds_during_run |= watch.finish();
    match outcome {
        Ok(()) if record.errors == 0 => record.ok = true,
        Ok(()) => record.error = Some(format!("{} wrong or failed answers", record.errors)),
        Err(e) => record.error = Some(e),
    }
    record
}

async fn measure(
    options: &Options,
    workload: &Workload,
    server: &mut Server,
    record: &mut RunRecord,
) -> Result<(), String> {
    if *workload == Workload::Search {
        let tools = server.request(1, "tools/list", json!({})).await?;
        check::tool_list(&tools)?;
    }
    let (method, params) = workload.request();
    let answer = server.request(2, method, params).await?;
    workload.check(&answer)?;

    let mut next_id = FIRST_ID;
    if options.warmup > 0 {
        let warm = load::run(server, workload, 1, Stop::Calls(options.warmup), next_id).await?;
        record.errors += warm.errors;
        next_id += options.warmup as u64 + 1;
    }

    let pid = Some(server.pid());
    let mark = cpu::Mark::now(pid);
    let mut sequential =
        load::run(server, workload, 1, Stop::Calls(options.calls), next_id).await?;
    let used = mark.and_then(|mark| mark.since(pid));
    next_id += options.calls as u64 + 1;
    sequential.latencies_ns.sort_unstable();
    record.seq_calls = Some(sequential.latencies_ns.len());
    record.seq_p50_us = Some(micros(percentile(&sequential.latencies_ns, 50.0)));
    record.seq_p95_us = Some(micros(percentile(&sequential.latencies_ns, 95.0)));
    record.seq_p99_us = Some(micros(percentile(&sequential.latencies_ns, 99.0)));
    record.seq_mean_us = Some(mean_micros(&sequential));
    if let Some(used) = used {
        record.seq_cpu_s = Some(used.cpu.as_secs_f64());
        record.seq_cpu_us_per_call = used.micros_per_call(sequential.latencies_ns.len());
        record.seq_cores = used.cores();
        record.seq_cpu_exact = Some(used.exact);
    }
    record.errors += sequential.errors;

    let (mark, driver_mark) = (cpu::Mark::now(pid), cpu::Mark::now(None));
    let mut loaded = load::run(
        server,
        workload,
        options.concurrency,
        Stop::After(options.duration),
        next_id,
    )
    .await?;
    let used = mark.and_then(|mark| mark.since(pid));
    let driver = driver_mark.and_then(|mark| mark.since(None));
    loaded.latencies_ns.sort_unstable();
    let calls = loaded.latencies_ns.len();
    record.load_concurrency = Some(options.concurrency);
    record.load_seconds = Some(loaded.elapsed.as_secs_f64());
    record.load_calls = Some(calls);
    record.load_calls_per_s = Some(calls as f64 / loaded.elapsed.as_secs_f64());
    record.load_p50_us = Some(micros(percentile(&loaded.latencies_ns, 50.0)));
    record.load_p95_us = Some(micros(percentile(&loaded.latencies_ns, 95.0)));
    record.load_p99_us = Some(micros(percentile(&loaded.latencies_ns, 99.0)));
    if let Some(used) = used {
        record.load_cpu_s = Some(used.cpu.as_secs_f64());
        record.load_cpu_us_per_call = used.micros_per_call(calls);
        record.load_cores = used.cores();
        record.load_cpu_exact = Some(used.exact);
    }
    record.load_driver_cores = driver.and_then(|used| used.cores());
    record.errors += loaded.errors;
    Ok(())
}

fn micros(ns: u64) -> f64 {
    (ns as f64 / 1e3 * 10.0).round() / 10.0
}

fn mean_micros(measured: &Measured) -> f64 {
    let n = measured.latencies_ns.len().max(1) as f64;
    let total: u64 = measured.latencies_ns.iter().sum();
    (total as f64 / n / 1e3 * 10.0).round() / 10.0
}

fn progress(options: &Options, r: &RunRecord) -> String {
    let head = format!("[run {}/{}] {}", r.run, options.runs, r.contender);
    match (&r.error, r.ok) {
        (Some(e), _) => format!("{head}: FAILED: {e}"),
        _ => format!(
            "{head}: cold {:.1} ms, seq p50 {:.0} µs p99 {:.0} µs, {}×: {:.0} calls/s p50 {:.0} µs p99 {:.0} µs, server {:.1} µs CPU/call on {:.2} cores, peak RSS {:.1} MiB",
            r.cold_start_ms.unwrap_or_default(),
            r.seq_p50_us.unwrap_or_default(),
            r.seq_p99_us.unwrap_or_default(),
            options.concurrency,
            r.load_calls_per_s.unwrap_or_default(),
            r.load_p50_us.unwrap_or_default(),
            r.load_p99_us.unwrap_or_default(),
            r.load_cpu_us_per_call.unwrap_or_default(),
            r.load_cores.unwrap_or_default(),
            r.peak_rss_kib.unwrap_or_default() as f64 / 1024.0,
        ),
    }
}
