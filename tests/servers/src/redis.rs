//! A Redis server of the test's own, on a loopback port, with an append-only file synced on
//! every write, so that what it acknowledged survives a crash and [`Redis::restart`].

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::PathBuf,
    process::Command,
    sync::{
        OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use crate::guardian::Guardian;

const SCRIPT: &str = r#"
set -u
root=$1 port=$2 server=$3
pid=
kill_server() {
  if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; fi
}
echo ok
while read -r command; do
  case "$command" in
    start)
      "$server" --port "$port" --bind 127.0.0.1 --dir "$root" --appendonly yes \
        --appendfsync always --save '' --protected-mode no --logfile "$root/log" \
        </dev/null >/dev/null 2>&1 &
      pid=$!
      echo ok ;;
    crash) kill_server; echo ok ;;
    quit) break ;;
    *) echo "unknown command: $command" ;;
  esac
done
kill_server
rm -rf "$root"
"#;

/// A running Redis server, killed and removed when dropped.
#[derive(Debug)]
pub struct Redis {
    guardian: Guardian,
    port: u16,
}

impl Redis {
    /// Starts a fresh server, or returns `None` (after a notice) when `redis-server` is not
    /// installed and servers are not [required](crate::required).
    pub fn start() -> Option<Self> {
        let Some(server) = server_binary() else {
            crate::missing("Redis (redis-server)");
            return None;
        };
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "carmy-redis-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a scratch directory for Redis");
        let port = crate::free_port();
        let mut command = Command::new("sh");
        command.current_dir(&root);
        let guardian = Guardian::start(
            "Redis",
            command,
            SCRIPT,
            &[
                &root.to_string_lossy(),
                &port.to_string(),
                &server.to_string_lossy(),
            ],
        );
        guardian.expect_ok("");
        let server = Self { guardian, port };
        server.restart();
        Some(server)
    }

    /// One server for the whole test process, started on first use; `None` as for
    /// [`start`](Self::start). Tests that crash their server start their own instead.
    pub fn shared() -> Option<&'static Self> {
        static SHARED: OnceLock<Option<Redis>> = OnceLock::new();
        SHARED.get_or_init(Self::start).as_ref()
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its URL (database 0).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server with SIGKILL; what it acknowledged comes back on
    /// [`restart`](Self::restart).
    pub fn crash(&self) {
        self.guardian.expect_ok("crash");
    }

    /// Starts the server again on the same port and files, and waits until it answers `PING`.
    pub fn restart(&self) {
        self.guardian.expect_ok("start");
        let patience = Duration::from_secs(30);
        let deadline = Instant::now() + patience;
        while !pong(self.port) {
            assert!(
                Instant::now() < deadline,
                "Redis did not answer PING on 127.0.0.1:{} within {patience:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether a server on `port` answers `PING` with `PONG` (not `-LOADING`, nor nothing).
fn pong(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut answer = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && &answer == b"+PONG\r\n"
}

/// `CARMY_REDIS_SERVER`, else `redis-server` on the `PATH`.
fn server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CARMY_REDIS_SERVER") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("redis-server"))
            .find(|candidate| candidate.is_file())
    })
}
