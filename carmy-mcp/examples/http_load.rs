//! A load driver for a streamable HTTP server in stateless mode (`shop http --stateless`): N
//! clients, each on its own keep-alive HTTP/1.1 connection, call one tool back to back for a
//! while; prints throughput, latency percentiles and errors.
//!
//! ```text
//! cargo run --release -p carmy-mcp --example http_load -- \
//!     --url http://127.0.0.1:8080/mcp --token TOKEN --clients 64 --seconds 10 \
//!     --tool get_product --arguments '{"id":"sku-001"}'
//! ```
//!
//! Raw HTTP on purpose: the driver shares the machine with the server, so it must cost little.
//! A call counts as an error unless it is answered `200` with a JSON-RPC result whose
//! `isError` is false.
//!
//! `--token` may be given several times too: client `n` sends the `n`-th token, in turn.
//! `--url` may be given several times (replicas behind no load balancer): the clients are
//! spread over them in turn. `--request-ids` sends a fresh `_meta["carmy/request_id"]` with
//! every call, so each is claimed and recorded by the idempotency store.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
};

struct Options {
    targets: Vec<(SocketAddr, String)>,
    /// Bearer tokens: client `n` sends the `n`-th, in turn (one principal each, so that no
    /// principal's share of request ids fills up under a long run).
    tokens: Vec<String>,
    clients: usize,
    seconds: u64,
    tool: String,
    arguments: Value,
    request_ids: bool,
}

fn options() -> Options {
    let mut urls = Vec::new();
    let mut options = Options {
        targets: Vec::new(),
        tokens: std::env::var("CARMY_LOAD_TOKEN").ok().into_iter().collect(),
        clients: 64,
        seconds: 10,
        tool: "get_product".into(),
        arguments: json!({ "id": "sku-001" }),
        request_ids: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--request-ids" {
            options.request_ids = true;
            continue;
        }
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => urls.push(value),
            "--token" => options.tokens.push(value),
            "--clients" => options.clients = value.parse().expect("--clients N"),
            "--seconds" => options.seconds = value.parse().expect("--seconds N"),
            "--tool" => options.tool = value,
            "--arguments" => options.arguments = serde_json::from_str(&value).expect("JSON"),
            other => panic!("unknown flag {other}"),
        }
    }
    if urls.is_empty() {
        urls.push("http://127.0.0.1:8080/mcp".to_owned());
    }
    for url in urls {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let addr = authority.parse().expect("an IP:port authority");
        let path = if path.is_empty() { "/" } else { path };
        options.targets.push((addr, path.to_owned()));
    }
    options
}

/// The bytes of one `tools/call` to `target`, with `request_id` in its `_meta` when given.
fn request(
    options: &Options,
    target: &(SocketAddr, String),
    token: Option<&str>,
    request_id: Option<&str>,
) -> Vec<u8> {
    let mut params = json!({ "name": options.tool, "arguments": options.arguments });
    if let Some(request_id) = request_id {
        params["_meta"] = json!({ "carmy/request_id": request_id });
    }
    let body =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }).to_string();
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        target.1,
        target.0,
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    format!("{head}\r\n{body}").into_bytes()
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
    first_error: Option<String>,
}

async fn client(options: &Options, number: usize, until: Instant) -> Tally {
    let target = &options.targets[number % options.targets.len()];
    let token = (!options.tokens.is_empty())
        .then(|| options.tokens[number % options.tokens.len()].as_str());
    let fixed = request(options, target, token, None);
    let mut tally = Tally::default();
    let mut connection: Option<BufReader<TcpStream>> = None;
    let mut sent = 0u64;
    while Instant::now() < until {
        let started = Instant::now();
        let with_id;
        let bytes = if options.request_ids {
            sent += 1;
            with_id = request(
                options,
                target,
                token,
                Some(&format!("load-{number}-{sent}")),
            );
            &with_id
        } else {
            &fixed
        };
        let answer = async {
            if connection.is_none() {
                let stream = TcpStream::connect(target.0).await?;
                stream.set_nodelay(true)?;
                connection = Some(BufReader::new(stream));
            }
            let stream = connection.as_mut().expect("connected");
            stream.get_mut().write_all(bytes).await?;
            read_response(stream).await
        }
        .await;
        match answer {
            Ok((200, body)) if succeeded(&body) => tally
                .latencies_us
                .push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX)),
            other => {
                connection = None;
                tally.errors += 1;
                if tally.first_error.is_none() {
                    tally.first_error = Some(match &other {
                        Ok((status, body)) => {
                            format!("HTTP {status}: {}", String::from_utf8_lossy(body))
                        }
                        Err(error) => error.to_string(),
                    });
                }
            }
        }
    }
    tally
}

fn succeeded(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .is_ok_and(|message| message["result"]["isError"] == Value::Bool(false))
}

async fn read_response(stream: &mut BufReader<TcpStream>) -> std::io::Result<(u16, Vec<u8>)> {
    let mut line = String::new();
    stream.read_line(&mut line).await?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut length = None;
    loop {
        line.clear();
        if stream.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length =
        length.ok_or_else(|| std::io::Error::other("no Content-Length (not stateless JSON?)"))?;
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await?;
    Ok((status, body))
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[rank]) / 1000.0
}

#[tokio::main]
async fn main() {
    let options = std::sync::Arc::new(options());
    let until = Instant::now() + Duration::from_secs(options.seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..options.clients)
        .map(|number| {
            let options = options.clone();
            tokio::spawn(async move { client(&options, number, until).await })
        })
        .collect();
    let mut latencies = Vec::new();
    let (mut errors, mut first_error) = (0, None);
    for task in tasks {
        let tally = task.await.expect("a client task");
        latencies.extend(tally.latencies_us);
        errors += tally.errors;
        first_error = first_error.or(tally.first_error);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    println!(
        "clients={} seconds={:.1} calls={} errors={} throughput={:.0}/s p50={:.2}ms p90={:.2}ms p99={:.2}ms max={:.2}ms",
        options.clients,
        elapsed,
        latencies.len(),
        errors,
        latencies.len() as f64 / elapsed,
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.90),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0),
    );
    if let Some(error) = first_error {
        println!("first error: {error}");
    }
}
