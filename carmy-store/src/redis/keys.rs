//! Where a request's records live: the names of the keys, and their hash tags.
//!
//! For the prefix `carmy:` and the principal `alice`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `carmy:{p:alice}:r:<request id>` | hash | one request: its state, fingerprint, lease, outcome |
//! | `carmy:{p:alice}:share` | sorted set | alice's request keys, scored by when each is forgotten |
//! | `carmy:{p:alice}:weights` | hash | what each of them weighs, and the sum |
//! | `carmy:{totals}:share` | sorted set | every principal's request keys, the same way |
//! | `carmy:{totals}:weights` | hash | their weights, and the sum |
//!
//! The application's records (see `records`), for the collection `orders`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `carmy:{c:orders}:records` | hash | each record's key → its version, `:`, its value as JSON text |
//! | `carmy:{c:orders}:version` | string | the stamp of the last commit that wrote into `orders` |
//! | `carmy:{records}:stamp` | string | the stamp of the last commit that wrote, by `INCR` |
//!
//! Tasks (see `tasks`), for the task `task_x` of `alice`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `carmy:{p:alice}:t:task_x` | hash | one task: its record, version, lease, what it weighs |
//! | `carmy:{p:alice}:tasks` | sorted set | alice's task keys, scored by when each is forgotten |
//! | `carmy:{p:alice}:task-weights` | hash | what each of them weighs, and the sum |
//! | `carmy:{tasks}:share` | sorted set | every principal's task keys, the same way |
//! | `carmy:{tasks}:weights` | hash | their weights, and the sum |
//! | `carmy:{tasks}:leases` | sorted set | the running tasks' keys, scored by when each lease ends |
//!
//! Redeemed single-use tokens (see `redemptions`), for `alice`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `carmy:{p:alice}:redeemed` | sorted set | alice's redeemed tokens, scored by when each was issued |
//! | `carmy:{p:alice}:redeemed-floor` | string | the newest of them let go: tokens as old or older are refused |
//! | `carmy:{redeemers}:principals` | sorted set | the principals holding records, scored by when their newest expires |
//!
//! Rate-limit buckets (see `rate_limits`), for `alice` calling `search`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `carmy:{p:alice}:rate:search` | string | the bucket's theoretical arrival time (µs, the server's clock); expires when full again |
//!
//! Tasks are counted apart from requests (shares of their own), as `MemoryTaskStore` bounds
//! them apart from `MemoryStore`'s keys. A task's key holds its principal, so another
//! principal holding its id names another key, which does not exist.
//!
//! One hash per collection, and one field per record holding its version and its value
//! together: a record is read whole by one `HGET`, so its value and its version are always of
//! the same commit (two fields, or two hashes, would take a script or a transaction to read
//! together), and a listing is one `HGETALL`. A key per record would cost Redis a key's
//! overhead per record and a listing a scan. The version key outlives the collection's last
//! record: a listing of the emptied collection is checked against it. None of these keys has a
//! TTL: records are the application's data, kept until it deletes them.
//!
//! Redis Cluster places a key by the text between its first `{` and the next `}`, so one
//! principal's keys share a slot and each script's keys of that principal could run on one
//! node. The tag always starts with `p:`, so an anonymous principal's tag is not empty (an
//! empty tag would hash the whole key), and it can never be `totals` or `tasks`. A
//! principal's `%`, `{` and `}` are escaped as `%25`, `%7B` and `%7D`: a `}` inside would end
//! the tag early, and the escape keeps two principals apart however they are spelled. The
//! request id (or the task id) comes last, after the tag, as it is: any text is a key name to
//! Redis. A collection's tag starts with
//! `c:` (escaped the same way, although `Records` admits no brace in a collection's name), so
//! no collection's keys meet a principal's, the totals' or the stamp's. A commit spans the
//! slots of its collections, the stamp's and, when it finishes a lease, its principal's: on a
//! cluster no script may, which is one more reason the store refuses Redis Cluster.

use carmy_core::{IdempotencyKey, StoreError, TaskKey};

/// The key names of one store (one prefix).
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

/// The five keys every script is given, in the order the scripts read them (`KEYS[1..5]`).
pub(super) struct Names {
    pub(super) request: String,
    pub(super) share: String,
    pub(super) weights: String,
    pub(super) total: String,
    pub(super) total_weights: String,
}

impl Names {
    pub(super) fn all(&self) -> [&str; 5] {
        [
            &self.request,
            &self.share,
            &self.weights,
            &self.total,
            &self.total_weights,
        ]
    }
}

/// The six keys every task script is given, in the order they read them (`KEYS[1..6]`): the
/// five of [`Names`], for a task, and the index of running leases.
pub(super) struct TaskNames {
    pub(super) task: String,
    pub(super) share: String,
    pub(super) weights: String,
    pub(super) total: String,
    pub(super) total_weights: String,
    pub(super) leases: String,
}

impl TaskNames {
    pub(super) fn all(&self) -> [&str; 6] {
        [
            &self.task,
            &self.share,
            &self.weights,
            &self.total,
            &self.total_weights,
            &self.leases,
        ]
    }
}

/// The keys of tasks shared by every principal: the totals, and the index of running leases.
pub(super) struct TaskTotals {
    pub(super) share: String,
    pub(super) weights: String,
    pub(super) leases: String,
}

/// The keys a redemption is given (`KEYS[1..3]`), and the principal as the redeemers name it.
pub(super) struct RedemptionNames {
    pub(super) redeemed: String,
    pub(super) floor: String,
    pub(super) redeemers: String,
    /// The principal's hash tag: one name per principal, however it is spelled.
    pub(super) member: String,
}

/// The two keys of one collection of records.
pub(super) struct Collection {
    pub(super) records: String,
    pub(super) version: String,
}

impl Keys {
    /// The names under `prefix`, which may not hold a hash tag's braces: a tag in the prefix
    /// would put every principal in one slot, or make a principal's keys disagree on theirs.
    pub(super) fn new(prefix: &str) -> Result<Self, StoreError> {
        if prefix.contains(['{', '}']) {
            return Err(StoreError::unavailable(format!(
                "the Redis key prefix {prefix:?} holds a brace; the store adds the hash tags itself"
            )));
        }
        Ok(Self {
            prefix: prefix.to_owned(),
        })
    }

    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The keys of `key`'s request, its principal's share and the totals.
    pub(super) fn of(&self, key: &IdempotencyKey) -> Names {
        let tagged = format!("{}{{p:{}}}", self.prefix, escape(key.principal()));
        Names {
            request: format!("{tagged}:r:{}", key.request_id()),
            share: format!("{tagged}:share"),
            weights: format!("{tagged}:weights"),
            total: format!("{}{{totals}}:share", self.prefix),
            total_weights: format!("{}{{totals}}:weights", self.prefix),
        }
    }

    /// The keys of `key`'s task, its principal's share of tasks and the totals of tasks.
    pub(super) fn task(&self, key: &TaskKey) -> TaskNames {
        let tagged = format!("{}{{p:{}}}", self.prefix, escape(key.principal()));
        let totals = self.task_totals();
        TaskNames {
            task: format!("{tagged}:t:{}", key.id()),
            share: format!("{tagged}:tasks"),
            weights: format!("{tagged}:task-weights"),
            total: totals.share,
            total_weights: totals.weights,
            leases: totals.leases,
        }
    }

    /// The keys of tasks every principal shares.
    pub(super) fn task_totals(&self) -> TaskTotals {
        let tasks = format!("{}{{tasks}}", self.prefix);
        TaskTotals {
            share: format!("{tasks}:share"),
            weights: format!("{tasks}:weights"),
            leases: format!("{tasks}:leases"),
        }
    }

    /// The keys of `principal`'s redeemed tokens, and the principals holding any.
    pub(super) fn redemption(&self, principal: &str) -> RedemptionNames {
        let member = format!("p:{}", escape(principal));
        let tagged = format!("{}{{{member}}}", self.prefix);
        RedemptionNames {
            redeemed: format!("{tagged}:redeemed"),
            floor: format!("{tagged}:redeemed-floor"),
            redeemers: format!("{}{{redeemers}}:principals", self.prefix),
            member,
        }
    }

    /// The key of the rate-limit bucket of `tool` and `principal` (empty: the anonymous one).
    /// The tool comes last, after the tag, as it is.
    pub(super) fn rate_bucket(&self, tool: &str, principal: &str) -> String {
        format!("{}{{p:{}}}:rate:{tool}", self.prefix, escape(principal))
    }

    /// The keys of the records of `collection`.
    pub(super) fn collection(&self, collection: &str) -> Collection {
        let tagged = format!("{}{{c:{}}}", self.prefix, escape(collection));
        Collection {
            records: format!("{tagged}:records"),
            version: format!("{tagged}:version"),
        }
    }

    /// The counter every commit that writes takes its stamp from.
    pub(super) fn stamp(&self) -> String {
        format!("{}{{records}}:stamp", self.prefix)
    }
}

/// `principal` with the characters a hash tag cannot hold escaped, injectively.
fn escape(principal: &str) -> String {
    let mut escaped = String::with_capacity(principal.len());
    for character in principal.chars() {
        match character {
            '%' => escaped.push_str("%25"),
            '{' => escaped.push_str("%7B"),
            '}' => escaped.push_str("%7D"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The part of a key Redis Cluster hashes: between the first `{` and the next `}`.
    fn hash_tag(key: &str) -> &str {
        let open = key.find('{').expect("a tag");
        let close = open + key[open..].find('}').expect("a closed tag");
        &key[open + 1..close]
    }

    #[test]
    fn one_principals_keys_share_a_tag_that_is_never_empty() {
        let keys = Keys::new("carmy:").unwrap();
        for principal in [None, Some("alice"), Some("a}b{c"), Some("%7D")] {
            let names = keys.of(&IdempotencyKey::new(principal, "r-1}{"));
            let tag = hash_tag(&names.request);
            assert!(tag.starts_with("p:"), "{tag}");
            assert_eq!(hash_tag(&names.share), tag);
            assert_eq!(hash_tag(&names.weights), tag);
            assert_eq!(hash_tag(&names.total), "totals");
        }
    }

    #[test]
    fn principals_and_request_ids_never_share_a_key() {
        let keys = Keys::new("carmy:").unwrap();
        let pairs = [
            ("a", "b:c"),
            ("a:b", "c"),
            ("a}", "c"),
            ("a%7D", "c"),
            ("a", "}c"),
            ("", "a"),
        ];
        let mut seen = std::collections::HashSet::new();
        for (principal, request_id) in pairs {
            let names = keys.of(&IdempotencyKey::new(Some(principal), request_id));
            assert!(seen.insert(names.request.clone()), "{}", names.request);
        }
        assert_eq!(
            keys.of(&IdempotencyKey::new(Some("a}b"), "r")).request,
            "carmy:{p:a%7Db}:r:r"
        );
    }

    #[test]
    fn records_keys_never_meet_a_requests() {
        let keys = Keys::new("carmy:").unwrap();
        let orders = keys.collection("orders");
        assert_eq!(orders.records, "carmy:{c:orders}:records");
        assert_eq!(hash_tag(&orders.version), "c:orders");
        assert_eq!(hash_tag(&keys.stamp()), "records");
        assert_eq!(hash_tag(&keys.collection("a}b").records), "c:a%7Db");
        let request = keys.of(&IdempotencyKey::new(Some("c:orders"), "records"));
        assert_ne!(hash_tag(&request.request), hash_tag(&orders.records));
    }

    #[test]
    fn a_task_is_its_principals_and_never_meets_a_request() {
        let keys = Keys::new("carmy:").unwrap();
        for principal in [None, Some("alice"), Some("a}b{c")] {
            let names = keys.task(&TaskKey::new(principal, "task_1}{"));
            let tag = hash_tag(&names.task);
            assert!(tag.starts_with("p:"), "{tag}");
            assert_eq!(hash_tag(&names.share), tag);
            assert_eq!(hash_tag(&names.weights), tag);
            for shared in [&names.total, &names.total_weights, &names.leases] {
                assert_eq!(hash_tag(shared), "tasks");
            }
        }
        let alice = keys.task(&TaskKey::new(Some("alice"), "task_1"));
        let mallory = keys.task(&TaskKey::new(Some("mallory"), "task_1"));
        assert_ne!(alice.task, mallory.task);
        assert_eq!(alice.task, "carmy:{p:alice}:t:task_1");
        // A request of the same name, and the claims' own shares, are other keys.
        let request = keys.of(&IdempotencyKey::new(Some("alice"), "task_1"));
        let claims = [
            &request.request,
            &request.share,
            &request.weights,
            &request.total,
        ];
        for name in alice.all() {
            assert!(claims.iter().all(|claim| *claim != name), "{name}");
        }
        let asks = keys.task(&TaskKey::new(Some("alice"), "asks"));
        assert_ne!(asks.task, asks.share);
    }

    #[test]
    fn a_principals_redeemed_tokens_are_its_own_keys() {
        let keys = Keys::new("carmy:").unwrap();
        let alice = keys.redemption("alice");
        assert_eq!(alice.redeemed, "carmy:{p:alice}:redeemed");
        assert_eq!(hash_tag(&alice.floor), "p:alice");
        assert_eq!(hash_tag(&alice.redeemers), "redeemers");
        assert_eq!(alice.member, "p:alice");
        assert_eq!(keys.redemption("a}b").member, "p:a%7Db");
        assert_eq!(hash_tag(&keys.redemption("").redeemed), "p:");
        // Never a request's or a task's key, whatever they are named.
        let request = keys.of(&IdempotencyKey::new(Some("alice"), "redeemed"));
        let task = keys.task(&TaskKey::new(Some("alice"), "redeemed"));
        assert_ne!(request.request, alice.redeemed);
        assert_ne!(task.task, alice.redeemed);
    }

    #[test]
    fn a_prefix_with_braces_is_refused() {
        assert!(Keys::new("app{1}:").is_err());
        assert!(Keys::new("").is_ok());
    }
}
