//! Closed-loop load over one connection: `concurrency` callers, each with one request in
//! flight, pipelined over the one stdin with distinct ids and matched by id on stdout.
//!
//! The client shares the CPU with the server, so it is kept cheap: one future writes (a batch
//! of requests per `write`), one reads and parses lines with borrowed `RawValue`s, both on a
//! single-threaded runtime; send times live in a slot per caller, so there is no map.

use std::{
    cell::Cell,
    io::Write as _,
    time::{Duration, Instant},
};

use serde_json::{Value, value::RawValue};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt},
    sync::mpsc,
    time::timeout,
};

use crate::{
    server::{Response, Server},
    workload::Workload,
};

/// When a phase stops issuing new calls.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// After this many calls in total.
    Calls(usize),
    /// After this long.
    After(Duration),
}

/// What a phase measured.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// Latency of every completed call, in nanoseconds.
    pub(crate) latencies_ns: Vec<u64>,
    /// From the first request written to the last answer read.
    pub(crate) elapsed: Duration,
    /// JSON-RPC errors, and answers that failed the sampled check.
    pub(crate) errors: usize,
}

/// Every `CHECK_EVERY`th answer is fully parsed and checked (`Workload::check`).
const CHECK_EVERY: u64 = 64;

/// Ids used by phases start here, clear of the handshake's.
pub(crate) const FIRST_ID: u64 = 1_000;

/// Runs one phase; `first_id` must leave room for distinct ids.
pub(crate) async fn run(
    server: &mut Server,
    workload: &Workload,
    concurrency: usize,
    stop: Stop,
    first_id: u64,
) -> Result<Measured, String> {
    let concurrency = match stop {
        Stop::Calls(calls) => concurrency.min(calls),
        Stop::After(_) => concurrency,
    };
    let budget = match stop {
        Stop::Calls(calls) => Duration::from_secs(60) + Duration::from_millis(calls as u64 * 20),
        Stop::After(duration) => duration + Duration::from_secs(60),
    };
    let sent_at: Vec<Cell<Option<Instant>>> = vec![Cell::new(None); concurrency];
    let (tx, rx) = mpsc::unbounded_channel::<u64>();
    for slot in 0..concurrency as u64 {
        tx.send(first_id + slot).expect("the receiver is alive");
    }
    let started = Instant::now();
    let Server { stdin, stdout, .. } = server;
    let writer = write_requests(stdin, workload, rx, &sent_at, first_id);
    let reader = read_answers(stdout, workload, tx, &sent_at, stop, started, first_id);
    let outcome = timeout(budget, async { tokio::try_join!(writer, reader) }).await;
    match outcome {
        Ok(Ok(((), measured))) => Ok(measured),
        Ok(Err(e)) => Err(server.failure(&e)),
        Err(_) => Err(server.failure(&format!("the phase did not finish in {budget:?}"))),
    }
}

async fn write_requests(
    stdin: &mut tokio::process::ChildStdin,
    workload: &Workload,
    mut ids: mpsc::UnboundedReceiver<u64>,
    sent_at: &[Cell<Option<Instant>>],
    first_id: u64,
) -> Result<(), String> {
    let prefix = br#"{"jsonrpc":"2.0","id":"#;
    let suffix = workload.line_suffix();
    let slots = sent_at.len() as u64;
    let mut batch = Vec::with_capacity(256);
    let mut bytes = Vec::with_capacity(1 << 16);
    while ids.recv_many(&mut batch, 1024).await > 0 {
        bytes.clear();
        let now = Instant::now();
        for id in batch.drain(..) {
            sent_at[((id - first_id) % slots) as usize].set(Some(now));
            bytes.extend_from_slice(prefix);
            write!(bytes, "{id}").expect("writing to a Vec");
            bytes.extend_from_slice(suffix.as_bytes());
            bytes.push(b'\n');
        }
        stdin
            .write_all(&bytes)
            .await
            .map_err(|e| format!("writing requests: {e}"))?;
        stdin
            .flush()
            .await
            .map_err(|e| format!("writing requests: {e}"))?;
    }
    Ok(())
}

async fn read_answers(
    stdout: &mut tokio::io::BufReader<tokio::process::ChildStdout>,
    workload: &Workload,
    next: mpsc::UnboundedSender<u64>,
    sent_at: &[Cell<Option<Instant>>],
    stop: Stop,
    started: Instant,
    first_id: u64,
) -> Result<Measured, String> {
    let slots = sent_at.len() as u64;
    let mut issued = slots as usize;
    let mut in_flight = slots as usize;
    let mut stopping = false;
    let mut measured = Measured {
        latencies_ns: Vec::with_capacity(match stop {
            Stop::Calls(calls) => calls,
            Stop::After(duration) => (duration.as_secs() as usize + 1) * 50_000,
        }),
        ..Measured::default()
    };
    let mut line = Vec::with_capacity(1 << 16);
    let mut next = Some(next);
    while in_flight > 0 {
        line.clear();
        let n = stdout
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| format!("reading answers: {e}"))?;
        if n == 0 {
            return Err("the server closed stdout under load".into());
        }
        let now = Instant::now();
        let response: Response<'_> = serde_json::from_slice(&line).map_err(|e| {
            format!(
                "not JSON-RPC on stdout ({e}): {}",
                String::from_utf8_lossy(&line)
            )
        })?;
        let Some(id) = response.numeric_id().filter(|id| *id >= first_id) else {
            continue; // a notification, or a request from the server: not ours
        };
        let slot = ((id - first_id) % slots) as usize;
        let Some(sent) = sent_at[slot].take() else {
            return Err(format!("an answer to id {id}, which is not in flight"));
        };
        measured.latencies_ns.push((now - sent).as_nanos() as u64);
        in_flight -= 1;
        match (response.error, response.result) {
            (None, Some(result)) => {
                if id % CHECK_EVERY == 0 && !answer_is_right(workload, result) {
                    measured.errors += 1;
                }
            }
            _ => measured.errors += 1,
        }
        if !stopping {
            stopping = match stop {
                Stop::Calls(calls) => issued >= calls,
                Stop::After(duration) => now - started >= duration,
            };
        }
        if stopping {
            next = None; // closing the channel ends the writer once the batch is out
        } else if let Some(next) = &next {
            next.send(id + slots).map_err(|_| "the writer stopped")?;
            issued += 1;
            in_flight += 1;
        }
    }
    measured.elapsed = started.elapsed();
    drop(next);
    Ok(measured)
}

fn answer_is_right(workload: &Workload, result: &RawValue) -> bool {
    serde_json::from_str::<Value>(result.get())
        .ok()
        .is_some_and(|result| workload.check(&result).is_ok())
}
