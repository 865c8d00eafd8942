//! The store's Lua scripts (in `lua/`), what each is sent and what it answers.
//!
//! Each claim, finish, release and commit is one script, which Redis runs atomically: no other
//! command runs between its reads and its writes, so of any number of claims of a key, from
//! any number of replicas, one acquires it, and of two commits that read the same record, one
//! finds it changed. A listing is a script too (it writes nothing), so that its rows and its
//! version are of one moment. Scripts are called by their SHA-1 (`EVALSHA`); `redis::Script`
//! loads a script again when the server answers `NOSCRIPT` (after a restart, or a `SCRIPT
//! FLUSH`). The store loads them all at connect, so a server that cannot run them is refused
//! there.

use std::time::Duration;

use carmy_core::{ExecutionStatus, Recorded, StoreError};
use redis::{Script, ScriptInvocation};

use super::{
    keys::{Collection, Names},
    link::{Link, LinkError},
    script_calls::{again_flag, field, invoke, invoke_once, ms, number, unexpected},
};
use crate::outcome;

const CLAIM: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/request.lua"),
    include_str!("lua/claim.lua")
);
const FINISH: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/request.lua"),
    include_str!("lua/finish.lua")
);
const RELEASE: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/request.lua"),
    include_str!("lua/release.lua")
);
const COMMIT: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/request.lua"),
    include_str!("lua/commit.lua")
);
const LIST: &str = include_str!("lua/list.lua");

pub(super) struct Scripts {
    claim: Script,
    finish: Script,
    release: Script,
    commit: Script,
    list: Script,
}

/// What a claim is sent besides its keys.
pub(super) struct ClaimArgs<'a> {
    pub(super) fingerprint: &'a [u8],
    pub(super) token: &'a str,
    pub(super) lease: Duration,
    /// The status to keep the key as uncertain with if the lease is lost; empty to forget it.
    pub(super) if_lost: &'a str,
    pub(super) ttl: Duration,
    pub(super) weight: usize,
    pub(super) max_entries_per_principal: usize,
    pub(super) max_bytes_per_principal: usize,
    pub(super) max_entries: usize,
    pub(super) max_bytes: usize,
}

/// What a claim found.
pub(super) enum Claimed {
    Acquired,
    Running {
        /// The holder's token, as the request's hash keeps it.
        token: String,
        /// What is left of its lease, by Redis's clock.
        left: Duration,
    },
    Finished(Recorded),
    Uncertain(ExecutionStatus),
    Conflict,
    /// The principal's share (`total` false) or the totals are full.
    Full {
        total: bool,
        entries: u64,
        bytes: u64,
    },
}

/// What a finish or a release found: whether the token still held the key.
pub(super) enum Settled {
    Done,
    Lost,
}

/// What finishing a lease is sent besides its keys: by a finish, or by a commit.
pub(super) struct Finish<'a> {
    pub(super) token: &'a str,
    /// The outcome as stored JSON.
    pub(super) text: &'a str,
    /// What to keep instead if the outcome does not fit in the share or the totals.
    pub(super) note: &'a str,
    pub(super) ttl: Duration,
    pub(super) max_bytes_per_principal: usize,
    pub(super) max_bytes: usize,
}

/// One commit, as the commit script is sent it: its collections numbered from 1.
pub(super) struct Commit<'a> {
    pub(super) stamp: &'a str,
    /// Each collection's records hash and version key, collection 1 first.
    pub(super) collections: Vec<Collection>,
    /// Each read's collection number, key and version seen.
    pub(super) reads: Vec<(usize, &'a str, u64)>,
    /// Each listing's collection number and version seen.
    pub(super) listings: Vec<(usize, u64)>,
    /// Each write's collection number, key and value as JSON text (`None` to delete).
    pub(super) writes: Vec<(usize, &'a str, Option<String>)>,
}

/// What a commit settles besides its writes.
pub(super) enum Settling<'a> {
    /// Nothing: a commit of a call without a request id.
    Nothing,
    /// The lease of `Finish::token`, finished with the outcome.
    Lease(&'a Names, &'a Finish<'a>),
    /// A request never claimed, recorded as finished with the outcome if there is room for it
    /// (the claim's fingerprint, weight and bounds of entries; its token is the finish's).
    Unclaimed(&'a Names, &'a Finish<'a>, &'a ClaimArgs<'a>),
}

/// What a commit found.
pub(super) enum Applied {
    Done,
    Conflict,
    /// The lease it was to finish is no longer its key's holder.
    Lost,
    /// The request it was to record is known already.
    Taken,
    /// No room to record the request: in the principal's share (`total` false) or the totals.
    Full {
        total: bool,
        entries: u64,
        bytes: u64,
    },
}

/// What a listing found: the collection's version and its fields as kept, in no order; or
/// more records than it may list.
pub(super) enum Listed {
    Rows {
        version: String,
        fields: Vec<String>,
    },
    Full {
        count: String,
    },
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            claim: Script::new(CLAIM),
            finish: Script::new(FINISH),
            release: Script::new(RELEASE),
            commit: Script::new(COMMIT),
            list: Script::new(LIST),
        }
    }

    /// Loads every script into the server's cache (where a server that cannot compile them
    /// says so).
    pub(super) async fn load(&self, link: &Link) -> Result<(), LinkError> {
        for script in [
            &self.claim,
            &self.finish,
            &self.release,
            &self.commit,
            &self.list,
        ] {
            link.run("script load", |mut connection, _| async move {
                script.load_async(&mut connection).await
            })
            .await?;
        }
        Ok(())
    }

    pub(super) async fn claim(
        &self,
        link: &Link,
        names: &Names,
        args: ClaimArgs<'_>,
    ) -> Result<Claimed, StoreError> {
        // Sent again, a claim needs no word of it: its token, drawn for this claim, is what
        // tells the script that the key is already its own.
        let reply = invoke(link, "claim", |_| {
            let mut invocation = invocation(&self.claim, names);
            invocation
                .arg(args.fingerprint)
                .arg(args.token)
                .arg(ms(args.lease))
                .arg(args.if_lost)
                .arg(ms(args.ttl))
                .arg(args.weight)
                .arg(args.max_entries_per_principal)
                .arg(args.max_bytes_per_principal)
                .arg(args.max_entries)
                .arg(args.max_bytes);
            invocation
        })
        .await?;
        let field = |n: usize| field("claim", &reply, n);
        let count = |n: usize| number("claim", &reply, n);
        Ok(match field(0)? {
            "acquired" => Claimed::Acquired,
            "running" => Claimed::Running {
                token: field(1)?.to_owned(),
                left: Duration::from_millis(count(2)?),
            },
            "finished" => Claimed::Finished(
                outcome::decode(field(1)?)
                    .map_err(|error| kept_value_unreadable("outcome", error))?,
            ),
            "uncertain" => Claimed::Uncertain(
                outcome::status_from(field(1)?)
                    .map_err(|error| kept_value_unreadable("status", error))?,
            ),
            "conflict" => Claimed::Conflict,
            "full" => Claimed::Full {
                total: field(1)? == "total",
                entries: count(2)?,
                bytes: count(3)?,
            },
            _ => return Err(unexpected("claim", &reply)),
        })
    }

    /// Records the outcome of `finish.token`'s claim (or its note, if it does not fit in the
    /// share or the totals).
    pub(super) async fn finish(
        &self,
        link: &Link,
        names: &Names,
        finish: &Finish<'_>,
    ) -> Result<Settled, StoreError> {
        let reply = invoke(link, "finish", |again| {
            let mut invocation = invocation(&self.finish, names);
            finish_args(&mut invocation, finish);
            invocation.arg(again_flag(again));
            invocation
        })
        .await?;
        settled("finish", &reply)
    }

    /// Checks and applies `commit` and settles what `settling` says: all or nothing.
    pub(super) async fn commit(
        &self,
        link: &Link,
        commit: &Commit<'_>,
        settling: Settling<'_>,
    ) -> Result<Applied, StoreError> {
        let (mode, names, finish, claim) = match settling {
            Settling::Nothing => ("", None, None, None),
            Settling::Lease(names, finish) => ("outcome", Some(names), Some(finish), None),
            Settling::Unclaimed(names, finish, claim) => {
                ("unclaimed", Some(names), Some(finish), Some(claim))
            }
        };
        let build = |again: bool| {
            let mut invocation = self.commit.prepare_invoke();
            for key in names.iter().flat_map(|names| names.all()) {
                invocation.key(key);
            }
            invocation.key(commit.stamp);
            for collection in &commit.collections {
                invocation.key(&collection.records).key(&collection.version);
            }
            invocation
                .arg(mode)
                .arg(again_flag(again))
                .arg(commit.reads.len())
                .arg(commit.listings.len())
                .arg(commit.writes.len());
            for (collection, key, seen) in &commit.reads {
                invocation.arg(collection).arg(key).arg(seen);
            }
            for (collection, seen) in &commit.listings {
                invocation.arg(collection).arg(seen);
            }
            for (collection, key, value) in &commit.writes {
                invocation
                    .arg(collection)
                    .arg(key)
                    .arg(value.as_deref().unwrap_or(""));
            }
            if let Some(finish) = finish {
                finish_args(&mut invocation, finish);
            }
            if let Some(claim) = claim {
                invocation
                    .arg(claim.fingerprint)
                    .arg(claim.weight)
                    .arg(claim.max_entries_per_principal)
                    .arg(claim.max_entries);
            }
            invocation
        };
        // Sent again, a commit that settles a request is recognised by its token (it settled
        // the key). One without has nothing to be recognised by: applied, its writes would move
        // what it read on, and the same commit sent again would fail as a conflict, so that its
        // tool would run again. It is sent once (see `link`).
        let reply = if finish.is_some() {
            invoke(link, "commit", build).await?
        } else {
            invoke_once(link, "commit", build).await?
        };
        let count = |n: usize| number("commit", &reply, n);
        match reply.first().map(String::as_str) {
            Some("done") => Ok(Applied::Done),
            Some("conflict") => Ok(Applied::Conflict),
            Some("lost") => Ok(Applied::Lost),
            Some("taken") => Ok(Applied::Taken),
            Some("full") => Ok(Applied::Full {
                total: field("commit", &reply, 1)? == "total",
                entries: count(2)?,
                bytes: count(3)?,
            }),
            _ => Err(unexpected("commit", &reply)),
        }
    }

    /// Every record of one collection (its records hash and version key), unless there are
    /// more than `most`.
    pub(super) async fn list(
        &self,
        link: &Link,
        collection: &Collection,
        most: usize,
    ) -> Result<Listed, StoreError> {
        let mut reply = invoke(link, "list", |_| {
            let mut invocation = self.list.prepare_invoke();
            invocation
                .key(&collection.records)
                .key(&collection.version)
                .arg(most);
            invocation
        })
        .await?
        .into_iter();
        match (reply.next().as_deref(), reply.next()) {
            (Some("listed"), Some(version)) => Ok(Listed::Rows {
                version,
                fields: reply.collect(),
            }),
            (Some("full"), Some(count)) => Ok(Listed::Full { count }),
            (first, _) => Err(StoreError::unavailable(format!(
                "the list script answered {first:?}, which this store does not know"
            ))),
        }
    }

    /// Forgets `token`'s claim (`status` empty) or keeps the key as uncertain with `status`.
    pub(super) async fn release(
        &self,
        link: &Link,
        names: &Names,
        token: &str,
        status: &str,
        ttl: Duration,
    ) -> Result<Settled, StoreError> {
        let reply = invoke(link, "release", |again| {
            let mut invocation = invocation(&self.release, names);
            invocation
                .arg(token)
                .arg(status)
                .arg(ms(ttl))
                .arg(again_flag(again));
            invocation
        })
        .await?;
        settled("release", &reply)
    }
}

fn invocation<'a>(script: &'a Script, names: &Names) -> ScriptInvocation<'a> {
    let mut invocation = script.prepare_invoke();
    for key in names.all() {
        invocation.key(key);
    }
    invocation
}

/// Finish's arguments, as the finish and commit scripts read them.
fn finish_args(invocation: &mut ScriptInvocation<'_>, finish: &Finish<'_>) {
    invocation
        .arg(finish.token)
        .arg(finish.text)
        .arg(finish.note)
        .arg(ms(finish.ttl))
        .arg(finish.max_bytes_per_principal)
        .arg(finish.max_bytes);
}

fn settled(what: &str, reply: &[String]) -> Result<Settled, StoreError> {
    match reply.first().map(String::as_str) {
        Some("finished" | "released") => Ok(Settled::Done),
        Some("lost") => Ok(Settled::Lost),
        _ => Err(unexpected(what, reply)),
    }
}

fn kept_value_unreadable(what: &str, error: serde_json::Error) -> StoreError {
    StoreError::unavailable(format!("a kept {what} cannot be read: {error}"))
}

#[cfg(test)]
mod tests {
    use carmy_core::IdempotencyKey;

    use super::*;
    use crate::redis::keys::Keys;

    /// Runs `script` on `names` with `args` on the shared test server.
    async fn run(
        server: &test_servers::Redis,
        script: &str,
        names: &Names,
        args: &[&str],
    ) -> String {
        run_on(server, script, &names.all(), args).await
    }

    /// Runs `script` on `keys` with `args` on the shared test server.
    async fn run_on(
        server: &test_servers::Redis,
        script: &str,
        keys: &[&str],
        args: &[&str],
    ) -> String {
        let mut connection = connect(server).await;
        let script = Script::new(script);
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        let reply: Vec<String> = invocation.invoke_async(&mut connection).await.unwrap();
        reply[0].clone()
    }

    async fn connect(server: &test_servers::Redis) -> redis::aio::MultiplexedConnection {
        redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// A claim or settle sent a second time (its first answer lost with its connection) is
    /// recognised by its token: the claim is still its own, the settle was applied. Sent the
    /// first time, a settle of a settled lease is refused, and a lease lost to its terms was
    /// settled by nobody, so even a settle sent again is refused.
    #[tokio::test]
    async fn a_call_sent_again_is_recognised_by_its_token() {
        let Some(server) = test_servers::Redis::shared() else {
            return;
        };
        let keys = Keys::new(&format!("scripts-{}:", uuid::Uuid::new_v4().simple())).unwrap();
        let names = keys.of(&IdempotencyKey::new(Some("alice"), "k"));
        let claim = |token: &'static str, lease: &'static str| {
            [
                "fp", token, lease, "lost", "60000", "300", "10", "100000", "10", "100000", "",
            ]
        };
        let finish = |token: &'static str, again: &'static str| {
            [token, "{}", "{}", "60000", "100000", "100000", again]
        };
        assert_eq!(
            run(server, CLAIM, &names, &claim("t1", "60000")).await,
            "acquired"
        );
        assert_eq!(
            run(server, CLAIM, &names, &claim("t1", "60000")).await,
            "acquired"
        );
        assert_eq!(
            run(server, CLAIM, &names, &claim("t2", "60000")).await,
            "running"
        );
        assert_eq!(
            run(server, FINISH, &names, &finish("t1", "")).await,
            "finished"
        );
        assert_eq!(run(server, FINISH, &names, &finish("t1", "")).await, "lost");
        assert_eq!(
            run(server, FINISH, &names, &finish("t1", "again")).await,
            "finished"
        );
        assert_eq!(
            run(server, FINISH, &names, &finish("t2", "again")).await,
            "lost"
        );

        let names = keys.of(&IdempotencyKey::new(Some("alice"), "lost"));
        assert_eq!(
            run(server, CLAIM, &names, &claim("t3", "0")).await,
            "acquired"
        );
        assert_eq!(
            run(server, CLAIM, &names, &claim("t4", "60000")).await,
            "uncertain"
        );
        assert_eq!(
            run(server, FINISH, &names, &finish("t3", "again")).await,
            "lost"
        );
        let release = ["t3", "lost", "60000", "again"];
        assert_eq!(run(server, RELEASE, &names, &release).await, "lost");
    }

    /// A commit that finishes a lease, sent a second time after its answer was lost, is
    /// recognised by its token: it answers `done` and applies nothing again (the stamp and the
    /// record are as the first left them). Sent the first time, the same commit of a settled
    /// lease is refused as lost, and so is one whose token never settled the key.
    #[tokio::test]
    async fn a_commit_sent_again_is_recognised_by_its_token() {
        let Some(server) = test_servers::Redis::shared() else {
            return;
        };
        let keys = Keys::new(&format!("scripts-{}:", uuid::Uuid::new_v4().simple())).unwrap();
        let names = keys.of(&IdempotencyKey::new(Some("alice"), "k"));
        let counters = keys.collection("counters");
        let stamp = keys.stamp();
        let claim = [
            "fp", "t1", "60000", "", "60000", "300", "10", "100000", "10", "100000",
        ];
        assert_eq!(run(server, CLAIM, &names, &claim).await, "acquired");
        let mut all_keys = names.all().to_vec();
        all_keys.extend([stamp.as_str(), &counters.records, &counters.version]);
        // Reads `counters/orders` as absent and writes 1 there, finishing t1's lease.
        let commit = |token: &'static str, again: &'static str| {
            [
                "outcome", again, "1", "0", "1", "1", "orders", "0", "1", "orders", "1", token,
                "{}", "{}", "60000", "100000", "100000",
            ]
        };
        assert_eq!(
            run_on(server, COMMIT, &all_keys, &commit("t1", "")).await,
            "done"
        );
        // What the commit left: the stamp, and the record's field.
        let connection = connect(server).await;
        let kept = || {
            let mut connection = connection.clone();
            let (stamp, records) = (stamp.clone(), counters.records.clone());
            async move {
                let stamp: String = redis::cmd("GET")
                    .arg(&stamp)
                    .query_async(&mut connection)
                    .await
                    .unwrap();
                let field: String = redis::cmd("HGET")
                    .arg(&records)
                    .arg("orders")
                    .query_async(&mut connection)
                    .await
                    .unwrap();
                (stamp, field)
            }
        };
        let first = kept().await;
        assert_eq!(first, ("1".to_owned(), "1:1".to_owned()));
        assert_eq!(
            run_on(server, COMMIT, &all_keys, &commit("t1", "again")).await,
            "done"
        );
        assert_eq!(kept().await, first);
        assert_eq!(
            run_on(server, COMMIT, &all_keys, &commit("t1", "")).await,
            "lost"
        );
        assert_eq!(
            run_on(server, COMMIT, &all_keys, &commit("t2", "again")).await,
            "lost"
        );
        assert_eq!(kept().await, first);
    }
}
