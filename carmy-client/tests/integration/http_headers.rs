//! `--header` and `--bearer` reach the server: a listener that records the first request head
//! it gets, then hangs up (so carmy exits 3, having sent it).

use crate::common;

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

/// A legacy event stream whose `endpoint` event names another origin (the same host, another
/// port): carmy refuses it before sending anything there, so the bearer token and the headers
/// stay with the server they were given for.
#[test]
fn the_legacy_transport_refuses_an_endpoint_on_another_origin() {
    use std::io::Write;

    let elsewhere = TcpListener::bind("127.0.0.1:0").expect("a port");
    let elsewhere_address = elsewhere.local_addr().expect("an address");
    let (send, reached) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in elsewhere.incoming() {
            let Ok(stream) = stream else { return };
            let mut line = String::new();
            let _ = BufReader::new(stream).read_line(&mut line);
            let _ = send.send(line);
        }
    });
    let stream_server = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!(
        "http://{}/sse",
        stream_server.local_addr().expect("an address")
    );
    std::thread::spawn(move || {
        let (mut stream, _) = stream_server.accept().expect("carmy connects");
        let mut reader = BufReader::new(stream.try_clone().expect("a clone"));
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n\
             event: endpoint\ndata: http://{elsewhere_address}/messages?sessionId=1\n\n"
        );
        let _ = stream.flush();
        // The stream stays open until carmy hangs up.
        let _ = reader.read_line(&mut line);
    });
    let run = carmy(&[
        "client",
        "-t",
        "sse",
        "-s",
        &url,
        "--bearer",
        "s3cret-token",
        "--timeout",
        "10",
        "list-tools",
    ]);
    // Whatever reached the other origin came before this test's own request.
    std::net::TcpStream::connect(elsewhere_address)
        .and_then(|mut stream| stream.write_all(b"GET /the-test HTTP/1.1\r\n\r\n"))
        .expect("the other origin");
    let first = reached.recv().expect("a request");
    assert_eq!(
        first, "GET /the-test HTTP/1.1\r\n",
        "carmy sent a request to the other origin: {run:#?}"
    );
    assert_eq!(run.code(), Some(3), "{run:#?}");
    assert!(run.stderr.contains("another origin"), "{run:#?}");
}
