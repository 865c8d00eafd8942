//! The store's three Lua scripts (in `lua/`), what each is sent and what it answers.
//!
//! Each claim, finish and release is one script, which Redis runs atomically: no other
//! command runs between its reads and its writes, so of any number of claims of a key, from
//! any number of replicas, one acquires it. Scripts are called by their SHA-1 (`EVALSHA`);
//! `redis::Script` loads a script again when the server answers `NOSCRIPT` (after a restart,
//! or a `SCRIPT FLUSH`). The store loads all three at connect, so a server that cannot run
//! them is refused there.

use std::time::Duration;

use carmy_core::{ExecutionStatus, Recorded, StoreError};
use redis::{Script, ScriptInvocation};

use super::{
    keys::Names,
    link::{Link, LinkError},
};
use crate::outcome;

const CLAIM: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/claim.lua")
);
const FINISH: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/finish.lua")
);
const RELEASE: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/release.lua")
);

pub(super) struct Scripts {
    claim: Script,
    finish: Script,
    release: Script,
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

/// What finishing a lease is sent besides its keys.
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

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            claim: Script::new(CLAIM),
            finish: Script::new(FINISH),
            release: Script::new(RELEASE),
        }
    }

    /// Loads every script into the server's cache (where a server that cannot compile them
    /// says so).
    pub(super) async fn load(&self, link: &Link) -> Result<(), LinkError> {
        for script in [&self.claim, &self.finish, &self.release] {
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
        let field = |n: usize| field(&reply, n);
        let count = |n: usize| -> Result<u64, StoreError> {
            field(n)?.parse().map_err(|_| unexpected("claim", &reply))
        };
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

/// Finish's arguments, as the finish script reads them.
fn finish_args(invocation: &mut ScriptInvocation<'_>, finish: &Finish<'_>) {
    invocation
        .arg(finish.token)
        .arg(finish.text)
        .arg(finish.note)
        .arg(ms(finish.ttl))
        .arg(finish.max_bytes_per_principal)
        .arg(finish.max_bytes);
}

/// Runs the invocation `build` makes: `build(again)` is called for each attempt, `again` when
/// the call is sent a second time (see `link`).
async fn invoke<'a>(
    link: &Link,
    what: &'static str,
    build: impl Fn(bool) -> ScriptInvocation<'a>,
) -> Result<Vec<String>, StoreError> {
    link.run(what, |mut connection, again| {
        let invocation = build(again);
        async move { invocation.invoke_async(&mut connection).await }
    })
    .await
    .map_err(StoreError::unavailable)
}

/// The settle scripts' last argument: `again` when the settle is sent a second time, so that
/// finding the key settled by its own token means it was applied already (the first time, it
/// means the lease was settled before: `LeaseLost`).
fn again_flag(again: bool) -> &'static str {
    if again { "again" } else { "" }
}

fn settled(what: &str, reply: &[String]) -> Result<Settled, StoreError> {
    match reply.first().map(String::as_str) {
        Some("finished" | "released") => Ok(Settled::Done),
        Some("lost") => Ok(Settled::Lost),
        _ => Err(unexpected(what, reply)),
    }
}

fn field(reply: &[String], n: usize) -> Result<&str, StoreError> {
    reply
        .get(n)
        .map(String::as_str)
        .ok_or_else(|| unexpected("claim", reply))
}

fn unexpected(what: &str, reply: &[String]) -> StoreError {
    // The reply's first word only: a whole one may carry an outcome.
    StoreError::unavailable(format!(
        "the {what} script answered {:?}, which this store does not know",
        reply.first()
    ))
}

fn kept_value_unreadable(what: &str, error: serde_json::Error) -> StoreError {
    StoreError::unavailable(format!("a kept {what} cannot be read: {error}"))
}

/// The longest span sent (about a thousand years): far from what Lua's numbers hold exactly
/// (2^53) once added to now.
const LONGEST_MS: u64 = 1000 * 366 * 24 * 60 * 60 * 1000;

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).map_or(LONGEST_MS, |ms| ms.min(LONGEST_MS))
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
        let mut connection = redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let script = Script::new(script);
        let mut invocation = invocation(&script, names);
        for arg in args {
            invocation.arg(*arg);
        }
        let reply: Vec<String> = invocation.invoke_async(&mut connection).await.unwrap();
        reply[0].clone()
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
}
