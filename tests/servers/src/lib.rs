//! Real PostgreSQL and Redis servers for tests: started from the binaries of Debian's
//! `postgresql` and `redis-server` packages, each on a loopback port and a scratch directory of
//! its own, crashed and restarted on request, and gone when the test process ends (however it
//! ends).
//!
//! `scripts/services.sh` installs the packages; `scripts/test.sh` runs it and sets
//! `CARMY_TEST_SERVERS=required`. Without that variable, a test whose server is not installed
//! prints a notice and passes without running, so `cargo test` works on a machine without
//! them; with it, a missing server fails the test.
//!
//! Each server is watched by a small shell process (its *guardian*) that holds the server and
//! reads commands on its stdin. When the test process exits, even by SIGKILL, the guardian
//! reads end-of-file, kills the server and removes its directory: no server outlives its test.

mod guardian;
mod postgres;
mod redis;

pub use postgres::Postgres;
pub use redis::Redis;

/// The variable that makes a missing server a failure instead of a skipped test.
pub const REQUIRED: &str = "CARMY_TEST_SERVERS";

/// Whether tests must fail when a server is not installed.
pub fn required() -> bool {
    std::env::var(REQUIRED).is_ok_and(|value| value == "required")
}

/// What a test does when `what` is not installed: fail if servers are required, else say it
/// was skipped and let the caller return.
fn missing(what: &str) {
    assert!(
        !required(),
        "{what} is not installed, and {REQUIRED}=required: run scripts/services.sh"
    );
    eprintln!("skipped: {what} is not installed (scripts/services.sh installs it)");
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free loopback port")
}

/// Waits until something accepts connections on `port`, or panics after `patience`.
fn wait_for_port(port: u16, patience: std::time::Duration, what: &str) {
    let deadline = std::time::Instant::now() + patience;
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not accept connections on 127.0.0.1:{port} within {patience:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
