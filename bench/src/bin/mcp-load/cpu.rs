//! The server's CPU time, read from `/proc`.
//!
//! A server may be fast because it burns more than its share of the machine (two busy workers
//! against the driver's one thread), or slow because it waits: calls per second alone cannot
//! tell. Its CPU time per call can, and so can the cores it kept busy (CPU time / wall time).
//!
//! Two sources, because neither is enough alone. `/proc/<pid>/stat` counts every thread of
//! the process, those that already exited included, but in 10 ms ticks: 20 µs per call over
//! `--quick`'s 500 sequential calls. `/proc/<pid>/schedstat` is in nanoseconds but counts one
//! thread, so the threads' own (`/proc/<pid>/task/<tid>/schedstat`) are summed; that misses a
//! thread that exits during the phase. The sum is used when every thread of the start is still
//! there at the end and it agrees with the ticks; otherwise the ticks are.

use std::time::{Duration, Instant};

/// Clock ticks per second of `/proc/<pid>/stat` (`sysconf(_SC_CLK_TCK)`): USER_HZ, part of
/// Linux's user-space ABI and 100 on every architecture it runs on. Read as a constant, since
/// asking sysconf needs libc and `unsafe`, which the workspace forbids.
const TICKS_PER_SECOND: u64 = 100;

/// How far the ticks may lag the nanoseconds: `utime` and `stime` are each rounded down.
const TICK_SLACK: Duration = Duration::from_millis(30);

/// `/proc/<pid>` for a server, `/proc/self` for the driver.
fn proc_dir(pid: Option<u32>) -> String {
    pid.map_or_else(|| "/proc/self".to_owned(), |pid| format!("/proc/{pid}"))
}

/// User plus system CPU time of the process, all its threads, in ticks; `None` once it is gone.
fn process_time(dir: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    cpu_ticks(&stat).map(ticks)
}

/// Nanoseconds on a CPU of each thread alive now, by thread id (sorted); `None` if unreadable.
fn thread_times(dir: &str) -> Option<Vec<(u32, u64)>> {
    let mut threads = Vec::new();
    for entry in std::fs::read_dir(format!("{dir}/task")).ok()? {
        let entry = entry.ok()?;
        let Some(tid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // A thread that exits between the listing and the read is simply gone.
        let Ok(line) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        threads.push((tid, schedstat_ns(&line)?));
    }
    threads.sort_unstable();
    Some(threads)
}

/// The first field of a schedstat line: time spent on a CPU, in nanoseconds.
fn schedstat_ns(line: &str) -> Option<u64> {
    line.split_ascii_whitespace().next()?.parse().ok()
}

/// The nanoseconds the threads ran between two listings, when every thread of the first is in
/// the second (threads started meanwhile count whole); `None` if one exited.
fn threads_used(before: &[(u32, u64)], after: &[(u32, u64)]) -> Option<Duration> {
    let mut used: u64 = after.iter().map(|(_, ns)| ns).sum();
    for (tid, ns) in before {
        let i = after.binary_search_by_key(tid, |(t, _)| *t).ok()?;
        used = used.checked_sub(*ns.min(&after[i].1))?;
    }
    Some(Duration::from_nanos(used))
}

/// The nanoseconds if they agree with the ticks (see the module's documentation).
fn choose(ticks: Duration, threads: Option<Duration>) -> (Duration, bool) {
    match threads {
        Some(ns) if ns + TICK_SLACK >= ticks && ns <= ticks + TICK_SLACK => (ns, true),
        _ => (ticks, false),
    }
}

fn ticks(n: u64) -> Duration {
    Duration::from_nanos(n * (1_000_000_000 / TICKS_PER_SECOND))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line, in clock ticks. The second
/// field is the command name in parentheses, which may itself hold spaces and parentheses, so
/// fields are counted from the last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // After the name: field 3 (state) is index 0, so field n is index n - 3.
    let mut fields = after_name.split_ascii_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// A process's CPU time and the wall clock at the start of a phase.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    ticks: Duration,
    threads: Option<Vec<(u32, u64)>>,
    at: Instant,
}

/// What a process used between two marks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Used {
    /// CPU time, user plus system, every thread.
    pub(crate) cpu: Duration,
    /// Wall time between the two reads.
    pub(crate) wall: Duration,
    /// `cpu` is the threads' nanoseconds, not ticks.
    pub(crate) exact: bool,
}

impl Mark {
    /// Marks `pid` now (`None` for the driver itself).
    pub(crate) fn now(pid: Option<u32>) -> Option<Self> {
        let dir = proc_dir(pid);
        let threads = thread_times(&dir);
        Some(Self {
            ticks: process_time(&dir)?,
            threads,
            at: Instant::now(),
        })
    }

    /// What `pid` used since this mark.
    pub(crate) fn since(self, pid: Option<u32>) -> Option<Used> {
        let later = Self::now(pid)?;
        let threads = match (&self.threads, &later.threads) {
            (Some(before), Some(after)) => threads_used(before, after),
            _ => None,
        };
        let (cpu, exact) = choose(later.ticks.saturating_sub(self.ticks), threads);
        Some(Used {
            cpu,
            wall: later.at - self.at,
            exact,
        })
    }
}

impl Used {
    /// CPU time per call, in µs (one decimal); `None` without calls.
    pub(crate) fn micros_per_call(&self, calls: usize) -> Option<f64> {
        (calls > 0).then(|| round1(self.cpu.as_secs_f64() * 1e6 / calls as f64))
    }

    /// Cores kept busy on average: CPU time / wall time (two decimals).
    pub(crate) fn cores(&self) -> Option<f64> {
        let wall = self.wall.as_secs_f64();
        (wall > 0.0).then(|| (self.cpu.as_secs_f64() / wall * 100.0).round() / 100.0)
    }
}

fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line in the kernel's format (proc_pid_stat(5)): utime 1523 and stime 387 ticks, then
    /// the waited-for children's 29821 and 3244, which are not the server's own.
    const STAT: &str = "48213 (shop) S 48190 48190 4121 34816 48190 4194304 2511 0 0 0 \
                        1523 387 29821 3244 20 0 1 0 1170529 27467776 1874 \
                        18446744073709551615 1 1 0 0 0 0 0 4096 1088 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn user_and_system_ticks_are_added() {
        assert_eq!(cpu_ticks(STAT), Some(1523 + 387));
    }

    #[test]
    fn names_with_spaces_and_parentheses_do_not_shift_fields() {
        let odd = STAT.replace("(shop)", "(my (odd) ) name)");
        assert_eq!(cpu_ticks(&odd), Some(1523 + 387));
        let python = STAT.replace("(shop)", "(python3.11)");
        assert_eq!(cpu_ticks(&python), Some(1910));
    }

    #[test]
    fn truncated_or_foreign_lines_are_refused() {
        assert_eq!(cpu_ticks(""), None);
        assert_eq!(cpu_ticks("48213 shop S 1 2 3"), None);
        assert_eq!(
            cpu_ticks("48213 (shop) S 48190 48190 4121 34816 48190 4194304 2511"),
            None
        );
        assert_eq!(cpu_ticks(&STAT.replace(" 1523 ", " x ")), None);
    }

    #[test]
    fn schedstat_lines_give_nanoseconds() {
        assert_eq!(schedstat_ns("93189570 9750966 353\n"), Some(93_189_570));
        assert_eq!(schedstat_ns(""), None);
        assert_eq!(schedstat_ns("x 1 2"), None);
    }

    #[test]
    fn threads_are_summed_while_none_exits() {
        let before = [(10, 1_000), (11, 5_000)];
        // Thread 12 started during the phase: all its time counts.
        let after = [(10, 4_000), (11, 5_500), (12, 700)];
        assert_eq!(
            threads_used(&before, &after),
            Some(Duration::from_nanos(3_000 + 500 + 700))
        );
        // Thread 11 exited: what it ran is unknown.
        assert_eq!(threads_used(&before, &[(10, 4_000), (12, 700)]), None);
    }

    #[test]
    fn nanoseconds_are_used_when_they_agree_with_the_ticks() {
        let ticks = Duration::from_millis(120);
        let ns = Duration::from_micros(127_345);
        assert_eq!(choose(ticks, Some(ns)), (ns, true));
        // A thread that started and exited within the phase is missing from the sum.
        assert_eq!(
            choose(ticks, Some(Duration::from_millis(60))),
            (ticks, false)
        );
        assert_eq!(
            choose(ticks, Some(Duration::from_millis(200))),
            (ticks, false)
        );
        assert_eq!(choose(ticks, None), (ticks, false));
    }

    #[test]
    fn ticks_are_hundredths_of_a_second() {
        assert_eq!(ticks(1910), Duration::from_millis(19_100));
    }

    #[test]
    fn per_call_and_cores() {
        let used = Used {
            cpu: Duration::from_millis(1_500),
            wall: Duration::from_secs(2),
            exact: true,
        };
        assert_eq!(used.micros_per_call(30_000), Some(50.0));
        assert_eq!(used.micros_per_call(0), None);
        assert_eq!(used.cores(), Some(0.75));
        let instant = Used {
            cpu: Duration::ZERO,
            wall: Duration::ZERO,
            exact: false,
        };
        assert_eq!(instant.cores(), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let mark = Mark::now(None).expect("/proc/self is readable");
        assert!(mark.threads.as_ref().is_some_and(|t| !t.is_empty()));
        std::thread::sleep(Duration::from_millis(20));
        let used = mark.since(Some(std::process::id())).expect("readable");
        assert!(used.wall >= Duration::from_millis(20), "{used:?}");
        assert!(Mark::now(Some(u32::MAX)).is_none());
    }
}
