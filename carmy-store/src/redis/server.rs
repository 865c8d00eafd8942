//! What the store checks of its server at connect: a version that runs its scripts, not a
//! cluster; and what it reads: the persistence settings ([`Durability`]) and the eviction
//! policy, each logged as a warning when acknowledged outcomes (or records) could be lost.

use std::collections::HashMap;

use carmy_core::StoreError;

use super::{
    durability::Durability,
    link::{Link, LinkError},
};

/// The oldest Redis whose scripts may declare flags (`#!lua`) and whose `CONFIG GET` takes
/// several names.
const OLDEST_MAJOR: u32 = 7;

/// Asks the server who it is and how it persists; refuses one the store cannot work with.
pub(super) async fn inspect(link: &Link) -> Result<Durability, StoreError> {
    let info: String = link
        .run("INFO", |mut connection, _| async move {
            redis::cmd("INFO").query_async(&mut connection).await
        })
        .await
        .map_err(StoreError::unavailable)?;
    let info = fields(&info);
    let version = info.get("redis_version").copied().unwrap_or("unknown");
    let major = version
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok());
    if major.is_none_or(|major| major < OLDEST_MAJOR) {
        return Err(StoreError::unavailable(format!(
            "Redis {version} cannot run the store's scripts: it needs Redis {OLDEST_MAJOR}.0 or later"
        )));
    }
    if info.get("cluster_enabled") == Some(&"1") {
        return Err(StoreError::unavailable(
            "the store does not run on Redis Cluster yet (its totals span hash slots): give it \
             a standalone server, or a primary with replicas",
        ));
    }
    let aof_enabled = info.get("aof_enabled") == Some(&"1");

    let settings = link
        .run("CONFIG GET", |mut connection, _| async move {
            redis::cmd("CONFIG")
                .arg("GET")
                .arg("appendfsync")
                .arg("save")
                .arg("maxmemory-policy")
                .query_async::<HashMap<String, String>>(&mut connection)
                .await
        })
        .await;
    let settings = match settings {
        Ok(settings) => Some(settings),
        // Refused (managed Redis often renames or forbids CONFIG): persistence is unknown.
        Err(LinkError::Call { error, .. }) if error.code().is_some() => {
            tracing::warn!(
                %error,
                "Redis would not show its persistence and eviction settings (CONFIG GET): make \
                 sure it syncs its append-only file before answering and never evicts keys"
            );
            None
        }
        Err(error) => return Err(StoreError::unavailable(error)),
    };
    let setting = |name: &str| {
        settings
            .as_ref()
            .and_then(|settings| settings.get(name))
            .map(String::as_str)
    };
    if let Some(warning) = setting("maxmemory-policy").and_then(eviction_warning) {
        tracing::warn!("{warning}");
    }
    Ok(Durability::of(
        aof_enabled,
        setting("appendfsync"),
        setting("save"),
    ))
}

/// What to warn of when Redis may evict keys to make room: every key of a claim has a TTL,
/// so `volatile-*` policies evict them as well as `allkeys-*` ones, which evict records too.
fn eviction_warning(policy: &str) -> Option<String> {
    (!policy.eq_ignore_ascii_case("noeviction")).then(|| {
        format!(
            "Redis may evict keys when full (maxmemory-policy {policy}): an evicted outcome is \
             forgotten, and its retry would run again; an evicted record is lost; set \
             maxmemory-policy noeviction"
        )
    })
}

/// The `name:value` lines of an `INFO` answer.
fn fields(info: &str) -> HashMap<&str, &str> {
    info.lines()
        .filter_map(|line| line.trim_end().split_once(':'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines_are_read_as_fields() {
        let info = "# Server\r\nredis_version:7.0.15\r\n\r\n# Persistence\r\naof_enabled:1\r\n";
        let fields = fields(info);
        assert_eq!(fields["redis_version"], "7.0.15");
        assert_eq!(fields["aof_enabled"], "1");
        assert!(!fields.contains_key("# Server"));
    }

    #[test]
    fn only_noeviction_goes_unwarned() {
        assert_eq!(eviction_warning("noeviction"), None);
        for policy in [
            "volatile-lru",
            "allkeys-lru",
            "volatile-ttl",
            "allkeys-random",
        ] {
            assert!(eviction_warning(policy).is_some(), "{policy}");
        }
    }
}
