//! `--header` and `--bearer` reach the server: a listener that records the first request head
//! it gets, then hangs up (so carmy exits 3, having sent it).

mod common;

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    sync::mpsc,
};

use common::carmy;

#[test]
fn headers_and_the_bearer_token_go_with_the_request() {
    headers_reach_the_server("http", "/mcp", "post /mcp http/1.1\r\n");
}

#[test]
fn headers_and_the_bearer_token_open_the_legacy_event_stream() {
    headers_reach_the_server("sse", "/sse", "get /sse http/1.1\r\n");
}

/// `carmy client -t <transport>` with headers and a bearer token, against a listener on
/// `path`; its first request head starts with `first_line`.
fn headers_reach_the_server(transport: &str, path: &str, first_line: &str) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!(
        "http://{}{path}",
        listener.local_addr().expect("an address")
    );
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("carmy connects");
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line.to_ascii_lowercase());
        }
        let _ = send.send(head);
        // Dropping the stream hangs up without an answer.
    });
    let run = carmy(&[
        "client",
        "-t",
        transport,
        "-s",
        &url,
        "--header",
        "X-Trace: abc-123",
        "--header",
        "X-Tenant:blue",
        "--bearer",
        "s3cret-token",
        "--timeout",
        "5",
        "list-tools",
    ]);
    assert_eq!(run.code(), Some(3), "{run:#?}");
    let head = receive.recv().expect("a request head");
    assert!(head.starts_with(first_line), "{head}");
    assert!(head.contains("x-trace: abc-123\r\n"), "{head}");
    assert!(head.contains("x-tenant: blue\r\n"), "{head}");
    assert!(
        head.contains("authorization: bearer s3cret-token\r\n"),
        "{head}"
    );
}
