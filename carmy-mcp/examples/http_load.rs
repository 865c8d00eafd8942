//! A load driver for a streamable HTTP server (`shop http`, with or without `--stateless`): N
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
//! every call (fresh across runs too), so each is claimed and recorded by the idempotency
//! store. `--sessions` makes each client open a session first (`initialize` on 2025-11-25,
//! then `notifications/initialized`) and call in it (and closes it at the end, `DELETE`);
//! answers may then come as JSON or on an event stream, either way with a length or in
//! chunks. `--expect-total N` counts a call only when its `structuredContent.total` is N. The
//! first line printed is the summary, `key=value` pairs.

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
    /// What this run's request ids start with: the clock when it started, so that no run sends
    /// an id an earlier one sent (a warm-up's among them), which would be a replay.
    run: u128,
    /// Open a session per client, and call in it.
    sessions: bool,
    /// A call counts only if its `structuredContent.total` is this.
    expect_total: Option<u64>,
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
        run: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
        sessions: false,
        expect_total: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--request-ids" {
            options.request_ids = true;
            continue;
        }
        if flag == "--sessions" {
            options.sessions = true;
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
            "--expect-total" => {
                options.expect_total = Some(value.parse().expect("--expect-total N"))
            }
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

/// The bytes of one `tools/call` to `target`, with `request_id` in its `_meta` when given, in
/// `session` when given.
fn request(
    options: &Options,
    target: &(SocketAddr, String),
    token: Option<&str>,
    request_id: Option<&str>,
    session: Option<&str>,
) -> Vec<u8> {
    let mut params = json!({ "name": options.tool, "arguments": options.arguments });
    if let Some(request_id) = request_id {
        params["_meta"] = json!({ "carmy/request_id": request_id });
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    post(target, token, session, &body)
}

/// The bytes of a `POST` of `body` to `target`.
fn post(
    target: &(SocketAddr, String),
    token: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> Vec<u8> {
    let body = body.to_string();
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        target.1,
        target.0,
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(session) = session {
        head.push_str(&format!(
            "Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n"
        ));
    }
    format!("{head}\r\n{body}").into_bytes()
}

/// The revision a session is opened with.
const PROTOCOL: &str = "2025-11-25";

/// Opens a session on `stream`: its id.
async fn open_session(
    stream: &mut BufReader<TcpStream>,
    target: &(SocketAddr, String),
    token: Option<&str>,
) -> std::io::Result<String> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": { "name": "http_load", "version": "0" }
        }
    });
    stream
        .get_mut()
        .write_all(&post(target, token, None, &initialize))
        .await?;
    let answer = read_response(stream).await?;
    let session = answer
        .session
        .filter(|_| answer.status == 200)
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "initialize: HTTP {} without a session: {}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            ))
        })?;
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    stream
        .get_mut()
        .write_all(&post(target, token, Some(&session), &initialized))
        .await?;
    let answer = read_response(stream).await?;
    if answer.status != 202 {
        return Err(std::io::Error::other(format!(
            "notifications/initialized: HTTP {}",
            answer.status
        )));
    }
    Ok(session)
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
    let mut tally = Tally::default();
    // The connection, and the session opened on it (with `--sessions`) with its call's bytes.
    let mut connection: Option<(BufReader<TcpStream>, Option<String>, Vec<u8>)> = None;
    let mut sent = 0u64;
    while Instant::now() < until {
        let started = Instant::now();
        let answer = async {
            if connection.is_none() {
                let stream = TcpStream::connect(target.0).await?;
                stream.set_nodelay(true)?;
                let mut stream = BufReader::new(stream);
                let session = match options.sessions {
                    true => Some(open_session(&mut stream, target, token).await?),
                    false => None,
                };
                let fixed = request(options, target, token, None, session.as_deref());
                connection = Some((stream, session, fixed));
            }
            let (stream, session, fixed) = connection.as_mut().expect("connected");
            let with_id;
            let bytes = if options.request_ids {
                sent += 1;
                let request_id = format!("load-{}-{number}-{sent}", options.run);
                with_id = request(
                    options,
                    target,
                    token,
                    Some(&request_id),
                    session.as_deref(),
                );
                &with_id
            } else {
                &*fixed
            };
            stream.get_mut().write_all(bytes).await?;
            read_response(stream).await
        }
        .await;
        match answer {
            Ok(Answer {
                status: 200, body, ..
            }) if succeeded(&body, options.expect_total) => tally
                .latencies_us
                .push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX)),
            other => {
                connection = None;
                tally.errors += 1;
                if tally.first_error.is_none() {
                    tally.first_error = Some(match &other {
                        Ok(answer) => format!(
                            "HTTP {}: {}",
                            answer.status,
                            String::from_utf8_lossy(&answer.body)
                        ),
                        Err(error) => error.to_string(),
                    });
                }
            }
        }
    }
    // A session is closed, so that the server does not hold it until it times out.
    if let Some((mut stream, Some(session), _)) = connection {
        let mut head = format!(
            "DELETE {} HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n",
            target.1, target.0
        );
        if let Some(token) = token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        head.push_str("\r\n");
        if stream.get_mut().write_all(head.as_bytes()).await.is_ok() {
            let _ = read_response(&mut stream).await;
        }
    }
    tally
}

/// A JSON-RPC result that is not a tool error (`isError` true), with `structuredContent.total`
/// as expected, when it is.
fn succeeded(body: &[u8], expect_total: Option<u64>) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|message| {
        let result = &message["result"];
        result.is_object()
            && result["isError"] != Value::Bool(true)
            && expect_total.is_none_or(|total| result["structuredContent"]["total"] == total)
    })
}

/// What came back: the status, the session it named, and the JSON-RPC message in its body
/// (an event stream's answer taken out of it).
struct Answer {
    status: u16,
    session: Option<String>,
    body: Vec<u8>,
}

async fn read_response(stream: &mut BufReader<TcpStream>) -> std::io::Result<Answer> {
    let mut line = String::new();
    stream.read_line(&mut line).await?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let (mut length, mut chunked, mut events, mut session) = (None, false, false, None);
    loop {
        line.clear();
        if stream.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-type") {
            events = value.starts_with("text/event-stream");
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            session = Some(value.to_owned());
        }
    }
    let body = if chunked {
        read_chunks(stream).await?
    } else {
        let mut body = vec![0; length.unwrap_or(0)];
        stream.read_exact(&mut body).await?;
        body
    };
    let body = if events { answer_in(&body) } else { body };
    Ok(Answer {
        status,
        session,
        body,
    })
}

/// A chunked body, whole.
async fn read_chunks(stream: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        stream.read_line(&mut line).await?;
        let size = line.trim_end().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| std::io::Error::other(format!("bad chunk size {line:?}")))?;
        let start = body.len();
        body.resize(start + size + 2, 0);
        stream.read_exact(&mut body[start..]).await?;
        body.truncate(start + size);
        if size == 0 {
            return Ok(body);
        }
    }
}

/// The JSON-RPC answer (a message with an `id`) among an event stream's `data:` lines.
fn answer_in(stream: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(stream)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| {
            serde_json::from_str::<Value>(data).is_ok_and(|message| message.get("id").is_some())
        })
        .map(|data| data.as_bytes().to_vec())
        .unwrap_or_default()
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
