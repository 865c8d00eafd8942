//! The servers start, keep what they committed across a crash, and leave nothing behind.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpStream,
};

use test_servers::{Postgres, Redis};

#[test]
fn postgres_keeps_committed_rows_across_a_crash() {
    let Some(server) = Postgres::start() else {
        return;
    };
    server.sql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)");
    server.crash();
    assert!(TcpStream::connect(("127.0.0.1", server.port())).is_err());
    server.restart();
    assert_eq!(server.sql("SELECT n FROM kept"), "7");
    let url = server.create_database("other_db");
    assert!(url.ends_with("/other_db"), "{url}");
}

#[test]
fn redis_keeps_acknowledged_writes_across_a_crash() {
    let Some(server) = Redis::start() else {
        return;
    };
    let ask = |command: &str| -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream.write_all(command.as_bytes()).unwrap();
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).unwrap();
        line.trim_end().to_owned()
    };
    assert_eq!(ask("SET kept 7\r\n"), "+OK");
    server.crash();
    assert!(TcpStream::connect(("127.0.0.1", server.port())).is_err());
    server.restart();
    assert_eq!(ask("GET kept\r\n"), "$1");
}

#[test]
fn a_dropped_server_leaves_no_process_or_directory() {
    let Some(server) = Redis::start() else {
        return;
    };
    let port = server.port();
    drop(server);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
