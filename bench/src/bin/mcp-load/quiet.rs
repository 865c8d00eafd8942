//! The machine is shared with other builds: measure only while no compiler is running.

use std::time::{Duration, Instant};

/// Process names that mean someone is building (and eating a core).
const BUILDERS: &[&str] = &[
    "rustc", "cc1", "cc1plus", "ld", "ld.lld", "ld.gold", "collect2",
];

/// The names of the build processes running now, deduplicated.
pub(crate) fn builds_running() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|comm| comm.trim().to_owned())
        .filter(|comm| BUILDERS.contains(&comm.as_str()))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Waits, at most `limit`, until no build is running; returns how long it waited and whether
/// the machine is quiet now.
pub(crate) async fn wait_for_quiet(limit: Duration) -> (Duration, bool) {
    let started = Instant::now();
    let mut told = false;
    loop {
        let running = builds_running();
        if running.is_empty() {
            return (started.elapsed(), true);
        }
        if started.elapsed() >= limit {
            eprintln!(
                "mcp-load: still building ({}); measuring anyway",
                running.join(", ")
            );
            return (started.elapsed(), false);
        }
        if !told {
            eprintln!("mcp-load: waiting for {} to finish", running.join(", "));
            told = true;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Watches for builds from a thread of its own (so the driver's runtime never blocks on
/// `/proc`) for as long as it lives.
pub(crate) struct Watch {
    seen: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::mpsc::Sender<()>,
}

impl Watch {
    /// Starts scanning `/proc` twice a second.
    pub(crate) fn start() -> Self {
        use std::sync::{Arc, atomic::AtomicBool, mpsc};
        let seen = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel::<()>();
        let flag = seen.clone();
        std::thread::spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_millis(500))
            {
                if !builds_running().is_empty() {
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        Self { seen, stop }
    }

    /// Stops watching; whether a build ran at any scan (or runs now).
    pub(crate) fn finish(self) -> bool {
        let _ = self.stop.send(());
        self.seen.load(std::sync::atomic::Ordering::Relaxed) || !builds_running().is_empty()
    }
}
