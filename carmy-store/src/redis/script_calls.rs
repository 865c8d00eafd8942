//! What every script call shares: sending it (again, when its answer was lost), the spans it is
//! sent, and reading its reply's fields, whatever the script.

use std::time::Duration;

use carmy_core::StoreError;
use redis::ScriptInvocation;

use super::link::Link;

/// Runs the invocation `build` makes: `build(again)` is called for each attempt, `again` when
/// the call is sent a second time (see `link`).
pub(super) async fn invoke<'a>(
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

/// [`invoke`], sent once at most.
pub(super) async fn invoke_once<'a>(
    link: &Link,
    what: &'static str,
    build: impl Fn(bool) -> ScriptInvocation<'a>,
) -> Result<Vec<String>, StoreError> {
    link.run_once(what, |mut connection, again| {
        let invocation = build(again);
        async move { invocation.invoke_async(&mut connection).await }
    })
    .await
    .map_err(StoreError::unavailable)
}

/// The settle scripts' last argument: `again` when the settle is sent a second time, so that
/// finding the key settled by its own token means it was applied already (the first time, it
/// means the lease was settled before: `LeaseLost`).
pub(super) fn again_flag(again: bool) -> &'static str {
    if again { "again" } else { "" }
}

/// The `n`th field of the reply of the `what` script.
pub(super) fn field<'a>(what: &str, reply: &'a [String], n: usize) -> Result<&'a str, StoreError> {
    reply
        .get(n)
        .map(String::as_str)
        .ok_or_else(|| unexpected(what, reply))
}

/// The `n`th field of the reply of the `what` script, a number.
pub(super) fn number(what: &str, reply: &[String], n: usize) -> Result<u64, StoreError> {
    field(what, reply, n)?
        .parse()
        .map_err(|_| unexpected(what, reply))
}

/// A reply the `what` script should not have given.
pub(super) fn unexpected(what: &str, reply: &[String]) -> StoreError {
    // The reply's first word only: a whole one may carry an outcome or a record.
    StoreError::unavailable(format!(
        "the {what} script answered {:?}, which this store does not know",
        reply.first()
    ))
}

/// The longest span sent (about a thousand years): far from what Lua's numbers hold exactly
/// (2^53) once added to now.
const LONGEST_MS: u64 = 1000 * 366 * 24 * 60 * 60 * 1000;

pub(super) fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).map_or(LONGEST_MS, |ms| ms.min(LONGEST_MS))
}
