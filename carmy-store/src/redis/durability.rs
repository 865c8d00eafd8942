//! [`Durability`]: what the server's persistence settings promise for an outcome it has
//! acknowledged, read once at connect.
//!
//! Redis answers a write once it is in memory. Whether it is also on disk by then depends on
//! two settings: `appendonly` (log every write to the append-only file) and `appendfsync`
//! (when that file is flushed to the disk). Only `appendonly yes` with `appendfsync always`
//! makes Redis sync the log before it answers, so that an outcome `finish` recorded survives
//! a crash of Redis or of its machine; with anything else, a crash can lose outcomes already
//! acknowledged, and their retries run the call again. A commit of records is one write like
//! a finish: kept or lost whole, with its outcome, under the same settings. The store says so
//! in the log at connect (it cannot change the server's settings, and should not refuse a
//! server the operator chose).

use std::fmt;

/// What the Redis server's persistence settings promise for acknowledged outcomes, as read
/// at connect ([`RedisStore::durability`](super::RedisStore::durability)). Every variant but
/// [`Fsynced`](Self::Fsynced) is logged as a warning at connect.
///
/// Whatever the settings, replication is asynchronous: when a replica is promoted after its
/// primary failed (Sentinel, a managed failover), what the primary acknowledged but had not
/// sent on yet is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// `appendonly yes`, `appendfsync always`: each write is in the append-only file, synced
    /// to the disk, before Redis answers it. Acknowledged outcomes survive a crash of Redis or
    /// of its machine. It costs a disk sync per claim, finish and release.
    Fsynced,
    /// `appendonly yes`, `appendfsync everysec` (Redis's default once the log is on): the log
    /// is synced about once a second. A crash of the machine loses the last second or two of
    /// acknowledged outcomes; so may a crash of Redis itself, when the disk is slow and Redis
    /// holds writes back behind a pending sync.
    EverySecond,
    /// `appendonly yes`, `appendfsync no`: the log is written, and synced whenever the
    /// operating system chooses (about every 30 s on Linux). A crash of Redis alone keeps what
    /// was written; a crash of the machine loses up to that much.
    OsFlushes,
    /// `appendonly no`, with snapshots (`save` rules, or unknown): a crash or a restart loses
    /// everything acknowledged since the last snapshot.
    Snapshots,
    /// `appendonly no`, `save ""`: nothing is written to disk; a restart loses every record.
    Nothing,
    /// The log is on but its sync policy could not be read: managed Redis often refuses
    /// `CONFIG GET`. Ask the provider what it promises.
    Unknown,
}

impl Durability {
    /// The decision: `aof_enabled` as `INFO persistence` says, and `appendfsync` and `save`
    /// from `CONFIG GET` (`None` when it was refused).
    pub(super) fn of(aof_enabled: bool, appendfsync: Option<&str>, save: Option<&str>) -> Self {
        match (aof_enabled, appendfsync, save) {
            (true, Some(policy), _) if policy.eq_ignore_ascii_case("always") => Self::Fsynced,
            (true, Some(policy), _) if policy.eq_ignore_ascii_case("everysec") => Self::EverySecond,
            (true, Some(policy), _) if policy.eq_ignore_ascii_case("no") => Self::OsFlushes,
            (true, _, _) => Self::Unknown,
            (false, _, Some(rules)) if rules.trim().is_empty() => Self::Nothing,
            (false, _, _) => Self::Snapshots,
        }
    }

    /// What to warn the operator of, if an acknowledged outcome could be lost.
    pub fn warning(self) -> Option<&'static str> {
        match self {
            Self::Fsynced => None,
            Self::EverySecond => Some(
                "Redis syncs its append-only file about once a second (appendfsync everysec): \
                 a crash can lose the last second or two of recorded outcomes, and their \
                 retries would run again; set appendfsync always",
            ),
            Self::OsFlushes => Some(
                "Redis leaves syncing its append-only file to the OS (appendfsync no): a crash \
                 of its machine can lose recorded outcomes, and their retries would run again; \
                 set appendfsync always",
            ),
            Self::Snapshots => Some(
                "Redis keeps no append-only file (appendonly no): a crash or restart loses every \
                 outcome recorded since its last snapshot, and their retries would run again; \
                 set appendonly yes and appendfsync always",
            ),
            Self::Nothing => Some(
                "Redis persists nothing (appendonly no, no snapshots): a restart loses every \
                 claim and outcome, and their retries would run again; set appendonly yes and \
                 appendfsync always",
            ),
            Self::Unknown => Some(
                "Redis would not say when it syncs its append-only file (CONFIG GET refused): \
                 unless it syncs before answering (appendfsync always), a crash can lose \
                 recorded outcomes, and their retries would run again",
            ),
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Fsynced => "appendonly yes, appendfsync always",
            Self::EverySecond => "appendonly yes, appendfsync everysec",
            Self::OsFlushes => "appendonly yes, appendfsync no",
            Self::Snapshots => "appendonly no (snapshots at most)",
            Self::Nothing => "appendonly no, no snapshots",
            Self::Unknown => "appendonly yes, appendfsync unknown",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_log_synced_before_each_answer_goes_unwarned() {
        let cases = [
            (true, Some("always"), Some(""), Durability::Fsynced),
            (true, Some("ALWAYS"), None, Durability::Fsynced),
            (
                true,
                Some("everysec"),
                Some("3600 1"),
                Durability::EverySecond,
            ),
            (true, Some("no"), Some(""), Durability::OsFlushes),
            (true, None, None, Durability::Unknown),
            (true, Some("sometimes"), None, Durability::Unknown),
            (
                false,
                Some("always"),
                Some("3600 1 300 100"),
                Durability::Snapshots,
            ),
            (false, None, None, Durability::Snapshots),
            (false, Some("always"), Some(""), Durability::Nothing),
        ];
        for (aof, fsync, save, expected) in cases {
            let durability = Durability::of(aof, fsync, save);
            assert_eq!(durability, expected, "{aof} {fsync:?} {save:?}");
            assert_eq!(
                durability.warning().is_none(),
                expected == Durability::Fsynced,
                "{durability:?}"
            );
        }
    }
}
