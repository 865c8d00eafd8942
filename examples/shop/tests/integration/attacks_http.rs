//! The shop's HTTP surface under the outside attacks of issue 14 (rows 3, 4 and 8, and what was
//! seen beside them) and issue 33 (rows 1 and 3), replayed against the real binary with its
//! default bounds: a flood of sessions, a flood of request heads that never end, another
//! principal holding a session's id, bodies that are not JSON, `subscriptions/listen` streams
//! holding every connection, and legacy SSE clients that read nothing. Memory is read from `/proc` while the attack runs; the
//! figures are printed (`--nocapture`) for the record. `SHOP_BIN` names another build to
//! attack (the one before the fix, to see each attack succeed).

use crate::common;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use carmy::mcp::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT, DEFAULT_MAX_OUTBOX_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
};
use common::{HttpShop, StdioShop};
use serde_json::{Value, json};

/// MiB of resident memory the server may gain under these attacks: what the bounded sessions
/// and connections take, and the allocator's slack.
const GROWTH_MIB: u64 = 48;

/// How long a request waits for its answer before the test calls the server unresponsive.
const PATIENCE: Duration = Duration::from_secs(10);

fn report(attack: &str, before: (u64, u64), after: (u64, u64)) {
    eprintln!(
        "{attack}: VmRSS {} -> {} KiB, VmHWM {} -> {} KiB",
        before.0, after.0, before.1, after.1
    );
}

fn assert_flat(attack: &str, before: (u64, u64), after: (u64, u64)) {
    assert!(
        after.0 < before.0 + GROWTH_MIB * 1024,
        "{attack}: resident memory grew from {} to {} KiB",
        before.0,
        after.0
    );
}

/// A token for principal `n` of a flood.
fn token(n: usize) -> (String, String) {
    (format!("flood-token-{n:04}-0123456789"), format!("p{n}"))
}

/// An answer, read off a kept-alive connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The JSON body, or the JSON-RPC answer in an SSE stream.
    fn json(&self) -> Value {
        if self.body.trim_start().starts_with('{') {
            return serde_json::from_str(&self.body).unwrap_or(Value::Null);
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("result").is_some() || message.get("error").is_some())
            .unwrap_or(Value::Null)
    }
}

/// One kept-alive HTTP/1.1 connection, one bearer token.
struct Conn {
    addr: String,
    auth: String,
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    /// Read only the head of a stream's answer.
    stream_only: bool,
}

impl Conn {
    fn open(shop: &HttpShop, token: &str) -> Self {
        let stream = TcpStream::connect(shop.addr()).expect("connect");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        Self {
            addr: shop.addr().to_owned(),
            auth: format!("Bearer {token}"),
            reader: BufReader::new(stream.try_clone().expect("clone")),
            stream,
            stream_only: false,
        }
    }

    /// Sends `method /mcp` with `headers` and `body`, and reads the answer.
    fn exchange(&mut self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
             Accept: application/json, text/event-stream\r\n",
            self.addr, self.auth
        );
        if method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        self.stream.write_all(&request).expect("send");
        self.receive()
    }

    /// `GET`: the answer's head, and its body unless it is a stream (which stays open).
    fn open_stream(&mut self, headers: &[(&str, &str)]) -> Answer {
        self.stream_only = true;
        self.exchange("GET", headers, b"")
    }

    fn post(&mut self, headers: &[(&str, &str)], message: &Value) -> Answer {
        self.exchange("POST", headers, message.to_string().as_bytes())
    }

    fn receive(&mut self) -> Answer {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("a header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        let value = |name: &str| {
            headers
                .iter()
                .find(|(key, _): &&(String, String)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.clone())
        };
        let streaming = value("content-type").is_some_and(|kind| kind == "text/event-stream");
        let body = if self.stream_only && streaming {
            b"<an open stream>".to_vec()
        } else if let Some(length) = value("content-length") {
            let mut body = vec![0; length.parse().expect("a length")];
            self.reader.read_exact(&mut body).expect("the body");
            body
        } else if value("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
            self.chunked()
        } else {
            let mut body = Vec::new();
            let _ = self.reader.read_to_end(&mut body);
            body
        };
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    fn chunked(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            self.reader.read_line(&mut size).expect("a chunk size");
            let size = usize::from_str_radix(size.trim(), 16).expect("a hex size");
            let mut chunk = vec![0; size + 2];
            self.reader.read_exact(&mut chunk).expect("a chunk");
            if size == 0 {
                return body;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
}

fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "attacker", "version": "1" }
        }
    })
}

/// A session opened by `conn`'s principal: its id.
fn open_session(conn: &mut Conn) -> String {
    let started = conn.post(&[], &initialize(0));
    assert_eq!(started.status, 200, "{}", started.body);
    let id = started
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = conn.post(
        &session_headers(&id),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    );
    assert_eq!(initialized.status, 202, "{}", initialized.body);
    id
}

fn session_headers(id: &str) -> [(&str, &str); 2] {
    [
        ("Mcp-Session-Id", id),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": name, "arguments": arguments }
    })
}

#[test]
fn a_flood_of_sessions_is_refused_past_the_bounds_and_memory_stays_flat() {
    const PRINCIPALS: usize = 40;
    const ATTEMPTS: usize = 500;
    let tokens: Vec<(String, String)> = (0..=PRINCIPALS).map(token).collect();
    let pairs: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(token, principal)| (token.as_str(), principal.as_str()))
        .collect();
    let shop = HttpShop::serve(&pairs, &[], None);
    let before = shop.memory_kib();

    // 20,000 `initialize` requests from 40 principals, as fast as one connection each goes.
    let started = Instant::now();
    let mut opened: Vec<(usize, String)> = Vec::new();
    let mut refusals: Vec<(usize, usize, Answer)> = Vec::new();
    for (principal, (token, _)) in tokens.iter().take(PRINCIPALS).enumerate() {
        let mut conn = Conn::open(&shop, token);
        for attempt in 0..ATTEMPTS {
            let answer = conn.post(&[], &initialize(attempt as u64));
            match answer.header("mcp-session-id") {
                Some(id) if answer.status == 200 => opened.push((principal, id.to_owned())),
                _ => refusals.push((principal, attempt, answer)),
            }
        }
    }
    let after = shop.memory_kib();
    report(
        &format!(
            "{} initialize requests in {:.1} s, {} sessions opened",
            PRINCIPALS * ATTEMPTS,
            started.elapsed().as_secs_f64(),
            opened.len()
        ),
        before,
        after,
    );

    // Each principal got its share until the server's bound was reached; then nobody did.
    let expected = DEFAULT_MAX_SESSIONS.min(PRINCIPALS * DEFAULT_MAX_SESSIONS_PER_PRINCIPAL);
    assert_eq!(opened.len(), expected, "sessions opened");
    let (principal, attempt, first) = &refusals[0];
    assert_eq!(
        (*principal, *attempt),
        (0, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL)
    );
    assert_eq!(first.status, 429, "{}", first.body);
    assert!(first.header("retry-after").is_some());
    let error = first.json();
    assert_eq!(error["id"], DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, "{error}");
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    let (_, _, last) = refusals.last().expect("refusals");
    assert_eq!(last.status, 503, "{}", last.body);
    assert_eq!(last.json()["error"]["data"]["error"]["code"], "CAPACITY");
    assert_flat("a flood of sessions", before, after);

    // A principal that took no part is refused while the server is full, and gets a place as
    // soon as one is given back.
    let mut latecomer = Conn::open(&shop, &tokens[PRINCIPALS].0);
    assert_eq!(latecomer.post(&[], &initialize(1)).status, 503);
    let (owner, id) = &opened[0];
    let mut conn = Conn::open(&shop, &tokens[*owner].0);
    assert_eq!(
        conn.exchange("DELETE", &session_headers(id), b"").status,
        202
    );
    let session = open_session(&mut latecomer);
    let answer = latecomer.post(
        &session_headers(&session),
        &call(2, "search_products", json!({ "query": "mouse" })),
    );
    assert_eq!(
        answer.json()["result"]["structuredContent"]["total"],
        4,
        "{}",
        answer.body
    );
}

#[test]
fn a_flood_of_streams_is_bounded_by_one_per_session() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const STREAMS: usize = 1_000;
    let shop = HttpShop::serve(&[(ALICE, "alice")], &[], None);
    let mut conn = Conn::open(&shop, ALICE);
    let sessions: Vec<String> = (0..DEFAULT_MAX_SESSIONS_PER_PRINCIPAL)
        .map(|_| open_session(&mut conn))
        .collect();
    let before = shop.memory_kib();
    let mut open = Vec::new();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for n in 0..STREAMS {
        let mut stream = Conn::open(&shop, ALICE);
        let answer = stream.open_stream(&session_headers(&sessions[n % sessions.len()]));
        *statuses.entry(answer.status).or_default() += 1;
        if answer.status == 200 {
            open.push(stream);
        }
    }
    let after = shop.memory_kib();
    report(
        &format!(
            "{STREAMS} streams asked on {} sessions: {statuses:?}",
            sessions.len()
        ),
        before,
        after,
    );
    assert_eq!(open.len(), sessions.len(), "streams open: {statuses:?}");
    assert_eq!(statuses.get(&409), Some(&(STREAMS - sessions.len())));
    assert_flat("a flood of streams", before, after);
}

/// Opens a connection and sends a request head that never ends; `None` if the server does not
/// take the connection within a second.
fn half_open(addr: &str) -> Option<TcpStream> {
    let mut stream =
        TcpStream::connect_timeout(&addr.parse().expect("an address"), Duration::from_secs(1))
            .ok()?;
    stream
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .ok()?;
    Some(stream)
}

/// `GET /health` on a new connection, if answered within `within`.
fn health(addr: &str, within: Duration) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr.parse().expect("an address"), within).ok()?;
    stream.set_read_timeout(Some(within)).ok()?;
    stream
        .write_all(
            format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_owned)
}

#[test]
fn half_sent_request_heads_cannot_take_the_server_down() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const OPEN_FILES: u32 = 256;
    const HEADS: usize = 400;
    let shop = HttpShop::serve(&[(ALICE, "alice")], &[], Some(OPEN_FILES));
    let before = shop.memory_kib();

    // More heads than the server has descriptors, none of them ever finished.
    let started = Instant::now();
    let mut heads: Vec<TcpStream> = (0..HEADS).filter_map(|_| half_open(shop.addr())).collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = shop.memory_kib();
    let answered = health(shop.addr(), Duration::from_secs(3));
    report(
        &format!(
            "{HEADS} half-sent heads with {OPEN_FILES} open files ({} connected)",
            heads.len()
        ),
        before,
        during,
    );
    assert_eq!(
        answered.as_deref(),
        Some("HTTP/1.1 200 OK"),
        "/health during the attack"
    );

    // The heads do not stay open: each is closed, to make room or at its deadline.
    let deadline = started + DEFAULT_HEADER_READ_TIMEOUT + Duration::from_secs(5);
    let mut still_open = 0;
    for head in &mut heads {
        let left = deadline.saturating_duration_since(Instant::now());
        head.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .expect("a read timeout");
        let mut byte = [0; 1];
        match head.read(&mut byte) {
            Ok(0) => {}
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            _ => still_open += 1,
        }
    }
    assert_eq!(
        still_open,
        0,
        "heads still open after {:?}",
        started.elapsed()
    );
    assert_flat("half-sent heads", before, shop.memory_kib());

    // And the server serves as before.
    let mut conn = Conn::open(&shop, ALICE);
    let session = open_session(&mut conn);
    let answer = conn.post(
        &session_headers(&session),
        &call(1, "search_products", json!({ "query": "mouse" })),
    );
    assert_eq!(
        answer.json()["result"]["structuredContent"]["total"],
        4,
        "{}",
        answer.body
    );
}

#[test]
fn another_principal_holding_a_session_id_can_neither_cancel_nor_use_nor_delete_it() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const MALLORY: &str = "mallory-token-0123456789abcdef";
    let shop = HttpShop::serve(&[(ALICE, "alice"), (MALLORY, "mallory")], &[], None);
    let mut alice = Conn::open(&shop, ALICE);
    let session = open_session(&mut alice);

    // Alice's report runs for two seconds in her session, on a connection of its own.
    let mut running = Conn::open(&shop, ALICE);
    let report_call = call(7, "sales_report", json!({ "seconds": 2 }));
    let headers = session.clone();
    let report = std::thread::spawn(move || running.post(&session_headers(&headers), &report_call));
    std::thread::sleep(Duration::from_millis(500));

    // Mallory holds the id: an unknown session is what she must see, whatever she sends.
    let mut mallory = Conn::open(&shop, MALLORY);
    let unknown = mallory.post(
        &session_headers("3f1c2b7a-5d4e-4c3b-9a8f-7e6d5c4b3a29"),
        &call(1, "list_orders", json!({})),
    );
    let on_alices = session_headers(&session);
    let cancel = mallory.post(
        &on_alices,
        &json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": { "requestId": 7, "reason": "mallory says so" }
        }),
    );
    let use_it = mallory.post(&on_alices, &call(2, "list_orders", json!({})));
    let stream = Conn::open(&shop, MALLORY).open_stream(&on_alices);

    let delete = mallory.exchange("DELETE", &on_alices, b"");
    let seen: Vec<(&str, u16, &str)> = [
        ("cancel", &cancel),
        ("call", &use_it),
        ("stream", &stream),
        ("delete", &delete),
    ]
    .into_iter()
    .map(|(what, answer)| (what, answer.status, answer.body.as_str()))
    .collect();
    for (what, status, body) in &seen {
        assert_eq!(
            (*status, *body),
            (unknown.status, unknown.body.as_str()),
            "mallory's {what} on alice's session; all: {seen:?}"
        );
    }
    assert_eq!(unknown.status, 404);

    // Alice's report ran to its end, and her session goes on.
    let report = report.join().expect("the report's thread").json();
    assert_eq!(
        report["result"]["_meta"]["carmy/status"], "succeeded",
        "{report}"
    );
    let answer = alice.post(
        &session_headers(&session),
        &call(3, "search_products", json!({ "query": "mouse" })),
    );
    assert_eq!(
        answer.json()["result"]["structuredContent"]["total"],
        4,
        "{}",
        answer.body
    );
}

#[test]
fn a_body_that_is_not_json_is_a_json_rpc_parse_error_over_http_as_on_stdio() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    let shop = HttpShop::serve(&[(ALICE, "alice")], &["--stateless"], None);
    let mut conn = Conn::open(&shop, ALICE);
    let answer = conn.exchange(
        "POST",
        &[],
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
    );
    assert_eq!(answer.status, 400, "{}", answer.body);
    let over_http = answer.json();

    let mut stdio = StdioShop::start(&[]);
    stdio.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n");
    let on_stdio = stdio.receive();
    assert_eq!(over_http["error"]["code"], -32700, "{over_http}");
    assert_eq!(over_http["error"]["code"], on_stdio["error"]["code"]);
    assert_eq!(over_http["id"], on_stdio["id"]);
}

#[test]
fn a_body_starting_with_a_byte_order_mark_is_read_over_http_as_on_stdio() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    let message = call(1, "search_products", json!({ "query": "mouse" }));
    let with_bom = [b"\xEF\xBB\xBF".as_slice(), message.to_string().as_bytes()].concat();

    let mut stdio = StdioShop::start(&[]);
    stdio.send_raw(&[with_bom.as_slice(), b"\n"].concat());
    let on_stdio = stdio.receive();
    assert_eq!(
        on_stdio["result"]["structuredContent"]["total"], 4,
        "{on_stdio}"
    );

    for args in [&["--stateless"][..], &[][..]] {
        let shop = HttpShop::serve(&[(ALICE, "alice")], args, None);
        let mut conn = Conn::open(&shop, ALICE);
        let headers = if args.is_empty() {
            Some(open_session(&mut conn))
        } else {
            None
        };
        let headers = headers.as_deref().map(session_headers);
        let answer = conn.exchange(
            "POST",
            headers.as_ref().map_or(&[][..], |h| &h[..]),
            &with_bom,
        );
        assert_eq!(answer.status, 200, "{args:?}: {}", answer.body);
        assert_eq!(
            answer.json()["result"]["structuredContent"],
            on_stdio["result"]["structuredContent"],
            "{args:?}"
        );
    }
}

/// `subscriptions/listen` (2026-07-28) on a connection of its own: the answer's head, and the
/// connection its stream stays open on.
fn listen(shop: &HttpShop, token: &str, id: usize) -> (Conn, Answer) {
    let mut conn = Conn::open(shop, token);
    conn.stream_only = true;
    let answer = conn.post(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "subscriptions/listen"),
        ],
        &json!({
            "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}
                },
                "notifications": { "resourcesListChanged": true }
            }
        }),
    );
    (conn, answer)
}

/// What a flood of listen streams left: those open, every status seen, and the first refusal
/// with the number of the listen it answered.
struct Flood {
    open: Vec<Conn>,
    statuses: std::collections::BTreeMap<u16, usize>,
    refused: Option<(usize, Answer)>,
}

/// `count` listen streams opened by one principal, one after another.
fn listen_flood(shop: &HttpShop, token: &str, count: usize) -> Flood {
    let mut flood = Flood {
        open: Vec::new(),
        statuses: std::collections::BTreeMap::new(),
        refused: None,
    };
    for n in 0..count {
        let (conn, answer) = listen(shop, token, n);
        *flood.statuses.entry(answer.status).or_default() += 1;
        if answer.status == 200 {
            flood.open.push(conn);
        } else {
            flood.refused.get_or_insert((n, answer));
        }
    }
    flood
}

#[test]
fn listen_streams_of_one_principal_are_bounded_as_its_sessions_are() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const LISTENS: usize = 200;
    let shop = HttpShop::serve(&[(ALICE, "alice")], &[], None);
    let before = shop.memory_kib();
    let Flood {
        open,
        statuses,
        refused,
    } = listen_flood(&shop, ALICE, LISTENS);
    let after = shop.memory_kib();
    report(
        &format!("{LISTENS} listen streams asked by one principal: {statuses:?}"),
        before,
        after,
    );
    assert_eq!(
        open.len(),
        DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
        "{statuses:?}"
    );
    let (n, refused) = refused.expect("refusals");
    assert_eq!(n, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL);
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.header("retry-after").is_some());
    let error = refused.json();
    assert_eq!(error["id"], n, "{error}");
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    assert_eq!(
        statuses.get(&429),
        Some(&(LISTENS - DEFAULT_MAX_SESSIONS_PER_PRINCIPAL))
    );
    assert_flat("a flood of listen streams", before, after);
}

#[test]
fn listen_streams_holding_every_connection_cannot_keep_health_from_answering() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const CONNECTIONS: usize = 16;
    const LISTENS: usize = 40;
    let shop = HttpShop::serve(
        &[(ALICE, "alice")],
        &["--max-connections", &CONNECTIONS.to_string()],
        None,
    );
    let Flood {
        open,
        statuses,
        refused,
    } = listen_flood(&shop, ALICE, LISTENS);
    let answered = health(shop.addr(), Duration::from_secs(3));
    eprintln!("{LISTENS} listen streams against {CONNECTIONS} connections: {statuses:?}");
    assert_eq!(
        answered.as_deref(),
        Some("HTTP/1.1 200 OK"),
        "/health while every connection listens"
    );
    assert_eq!(open.len(), CONNECTIONS, "{statuses:?}");
    // The others were answered at once that there is no room, not left waiting.
    let (_, refused) = refused.expect("refusals");
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(refused.header("retry-after").is_some());
    let error = refused.json();
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_connections"], CONNECTIONS,
        "{error}"
    );
    assert_eq!(statuses.get(&503), Some(&(LISTENS - CONNECTIONS)));
}

/// MiB of resident memory the server may gain while legacy SSE clients read nothing, per
/// session: what waits for it (its outbox) and its reads in progress, each of them holding the
/// file twice over at most (as read, and as the answer's event); then the allocator's slack.
fn legacy_sse_growth_mib(sessions: usize, file_bytes: usize) -> u64 {
    let per_session = DEFAULT_MAX_OUTBOX_BYTES + DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT * 2 * file_bytes;
    u64::try_from((sessions * per_session) >> 20).expect("MiB fit") + GROWTH_MIB
}

/// A legacy SSE session whose client reads its stream only as far as the endpoint.
struct Unread {
    _stream: TcpStream,
    endpoint: String,
}

impl Unread {
    fn open(shop: &HttpShop, token: &str) -> Self {
        let mut stream = TcpStream::connect(shop.addr()).expect("connect");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        write!(
            stream,
            "GET /sse HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Accept: text/event-stream\r\n\r\n",
            shop.addr()
        )
        .expect("send");
        let mut seen = Vec::new();
        let endpoint = loop {
            let mut byte = [0; 1];
            assert_eq!(
                stream.read(&mut byte).expect("the stream"),
                1,
                "the stream ended"
            );
            seen.push(byte[0]);
            let text = String::from_utf8_lossy(&seen);
            if let Some((_, event)) = text.split_once("event: endpoint\ndata: ")
                && let Some((endpoint, _)) = event.split_once("\n\n")
            {
                break endpoint.to_owned();
            }
        };
        Self {
            _stream: stream,
            endpoint,
        }
    }

    /// Posts `message` to the session: the status.
    fn post(&self, shop: &HttpShop, token: &str, message: &Value) -> u16 {
        let body = message.to_string();
        let mut stream = TcpStream::connect(shop.addr()).expect("connect");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        write!(
            stream,
            "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.endpoint,
            shop.addr(),
            body.len()
        )
        .expect("send");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|status| status.parse().ok())
            .unwrap_or_else(|| panic!("a status: {answer:?}"))
    }
}

#[test]
fn legacy_sse_clients_that_read_nothing_cannot_grow_memory() {
    const ALICE: &str = "alice-token-0123456789abcdef";
    const SESSIONS: usize = 2;
    const READS: usize = 100;
    const FILE_BYTES: usize = 4 * 1024 * 1024;
    let dir = std::env::temp_dir().join(format!("shop-unread-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    std::fs::write(dir.join("big.txt"), "x".repeat(FILE_BYTES)).expect("the file");
    let root = std::fs::canonicalize(&dir).expect("the root");
    let uri = format!("file://{}/big.txt", root.display());
    let shop = HttpShop::serve(
        &[(ALICE, "alice")],
        &[
            "--legacy-sse",
            "--resource-root",
            root.to_str().expect("a UTF-8 path"),
            "--write-timeout",
            "5",
        ],
        None,
    );
    let before = shop.memory_kib();
    let sessions: Vec<Unread> = (0..SESSIONS).map(|_| Unread::open(&shop, ALICE)).collect();
    for session in &sessions {
        assert_eq!(session.post(&shop, ALICE, &initialize(0)), 202);
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(session.post(&shop, ALICE, &initialized), 202);
    }

    // Each session asks for the file a hundred times, and reads none of it.
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for n in 1..=READS {
        for session in &sessions {
            let read = json!({
                "jsonrpc": "2.0", "id": n, "method": "resources/read", "params": { "uri": uri }
            });
            *statuses
                .entry(session.post(&shop, ALICE, &read))
                .or_default() += 1;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = shop.memory_kib();
    report(
        &format!(
            "{SESSIONS} unread legacy SSE sessions asking {READS} reads of {} MiB each: \
             {statuses:?}",
            FILE_BYTES >> 20
        ),
        before,
        after,
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Each session took a few (at most its requests in progress, and while its client was not
    // behind), then refused the rest (`429`), or was closed for leaving more than its outbox
    // holds unread (`404`).
    assert!(
        statuses.get(&202).copied().unwrap_or_default()
            <= SESSIONS
                * (DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT + DEFAULT_MAX_OUTBOX_BYTES / FILE_BYTES),
        "{statuses:?}"
    );
    assert!(
        after.0 < before.0 + legacy_sse_growth_mib(SESSIONS, FILE_BYTES) * 1024,
        "resident memory grew from {} to {} KiB",
        before.0,
        after.0
    );

    // Their streams take no bytes: at the write deadline they are closed, and their sessions
    // with them.
    let ping = json!({ "jsonrpc": "2.0", "id": 0, "method": "ping" });
    let deadline = Instant::now() + PATIENCE + Duration::from_secs(5);
    for session in &sessions {
        while session.post(&shop, ALICE, &ping) != 404 {
            assert!(
                Instant::now() < deadline,
                "a session outlived its write deadline"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
