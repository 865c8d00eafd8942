//! A PostgreSQL server of the test's own: a fresh cluster (`initdb`) in a scratch directory,
//! served on a loopback port, trusting local connections.
//!
//! PostgreSQL refuses to run as root, so when the tests run as root (CI does) the guardian and
//! everything it starts run as the `postgres` user that Debian's package creates.

use std::{
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use crate::guardian::Guardian;

const SCRIPT: &str = r#"
set -u
root=$1 port=$2 bin=$3
ctl() { "$bin/pg_ctl" -D "$root/data" "$@" >/dev/null 2>&1; }
if ! "$bin/initdb" -D "$root/data" -A trust -U postgres -E UTF8 --no-sync >"$root/initdb.log" 2>&1; then
  echo "initdb failed: $(tail -n 3 "$root/initdb.log" | tr '\n' ' ')"
  rm -rf "$root"
  exit 1
fi
echo ok
while read -r command; do
  case "$command" in
    start)
      # fsync off: a test kills the server, never the machine, and the OS keeps what was written.
      if ctl -l "$root/log" -w -t 60 start -o "-p $port -k $root -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400"; then
        echo ok
      else
        echo "start failed: $(tail -n 3 "$root/log" | tr '\n' ' ')"
      fi ;;
    crash) ctl -m immediate -w stop; echo ok ;;
    stop) ctl -m fast -w stop; echo ok ;;
    quit) break ;;
    *) echo "unknown command: $command" ;;
  esac
done
ctl -m immediate -w stop
rm -rf "$root"
"#;

/// A running PostgreSQL server, stopped and removed when dropped.
#[derive(Debug)]
pub struct Postgres {
    guardian: Guardian,
    port: u16,
    bin: PathBuf,
}

impl Postgres {
    /// Starts a fresh server, or returns `None` (after a notice) when PostgreSQL is not
    /// installed and servers are not [required](crate::required).
    pub fn start() -> Option<Self> {
        let Some(bin) = bin_dir() else {
            crate::missing("PostgreSQL");
            return None;
        };
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "carmy-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a scratch directory for PostgreSQL");
        let mut command = Command::new("sh");
        command.current_dir(&root);
        if let Some((uid, gid)) = run_as() {
            std::os::unix::fs::chown(&root, Some(uid), Some(gid))
                .expect("the scratch directory given to the postgres user");
            command.uid(uid).gid(gid).env("HOME", &root);
        }
        let port = crate::free_port();
        let guardian = Guardian::start(
            "PostgreSQL",
            command,
            SCRIPT,
            &[
                &root.to_string_lossy(),
                &port.to_string(),
                &bin.to_string_lossy(),
            ],
        );
        guardian.expect_ok("");
        let server = Self {
            guardian,
            port,
            bin,
        };
        server.restart();
        Some(server)
    }

    /// One server for the whole test process, started on first use; `None` as for
    /// [`start`](Self::start). Tests that crash their server start their own instead.
    pub fn shared() -> Option<&'static Self> {
        static SHARED: OnceLock<Option<Postgres>> = OnceLock::new();
        SHARED.get_or_init(Self::start).as_ref()
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of its `postgres` database, as the superuser `postgres`.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The URL of `database` on it.
    pub fn url_of(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates an empty database named `name` (letters, digits and `_`) and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "a database name of letters, digits and `_`: {name}"
        );
        self.sql(&format!("CREATE DATABASE {name}"));
        self.url_of(name)
    }

    /// Runs `sql` on the `postgres` database with `psql`, and returns what it printed (rows
    /// unaligned, without headers). Panics if it fails.
    pub fn sql(&self, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
            ])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
            ])
            .args(["-c", sql])
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql -c {sql:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Stops the server the way a crash would (`pg_ctl stop -m immediate`: every process
    /// killed, no checkpoint); what was committed comes back on [`restart`](Self::restart).
    pub fn crash(&self) {
        self.guardian.expect_ok("crash");
    }

    /// Starts the server again on the same port and data, and waits until it accepts
    /// connections.
    pub fn restart(&self) {
        self.guardian.expect_ok("start");
        crate::wait_for_port(self.port, Duration::from_secs(30), "PostgreSQL");
    }
}

/// The directory of the newest PostgreSQL's binaries: `CARMY_PG_BINDIR`, else Debian's
/// `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CARMY_PG_BINDIR") {
        return Some(PathBuf::from(dir));
    }
    let installed = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            installed(&bin).then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version)
        .map(|(_, bin)| bin)
}

/// The `postgres` user's ids when running as root (PostgreSQL will not run as root); `None`
/// otherwise, to run as ourselves.
fn run_as() -> Option<(u32, u32)> {
    let output = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&output.stdout).trim() != "0" {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd");
    let ids = passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres") && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    });
    Some(ids.expect(
        "running as root, PostgreSQL needs the `postgres` user (Debian's package creates it)",
    ))
}
