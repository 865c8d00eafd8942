//! The tables, and how the store creates and migrates them when it connects.
//!
//! One row per key in `claims`; `expires_at` means one thing per state, so one index finds
//! everything due: a held claim's lease expiry, a settled key's end of retention. Both are
//! instants of the server's clock, never a replica's.
//!
//! The counts the bounds are checked against are kept by a trigger, in the statement that
//! changes the rows, so they can never drift from them: `shares` has one row per principal,
//! `totals` splits the sums across principals into [`SLOTS`] rows (a principal's keys always
//! count in the same one), so claims of different principals rarely touch the same row.
//! Another trigger announces each settled claim that someone waits on (`NOTIFY`), for waiters
//! in other processes.
//!
//! Layout 2 adds the application's records (`carmy_core::records`): `records` by collection and
//! key, `collections` with each one's version, and the `record_stamp` sequence the versions are
//! drawn from (see `records` for how a commit uses them).
//!
//! Layout 3 adds tasks (`carmy_core::TaskStore`): `tasks` by principal and id, each row the
//! task's record (`crate::task_record`'s text) beside what the server decides on without
//! reading it (the lease's token, one `expires_at` for the lease's expiry while it runs and the
//! end of its retention once it ended, a counter of the writes its holder must act on), and
//! the counts of the task bounds kept as those of the claims are: `task_shares` per principal,
//! `task_totals` split across [`SLOTS`] rows, both by a trigger. Another trigger announces a
//! write the holder must act on (a cancel request, answers) on the same channel as settled
//! keys, so the replica holding the task hears of it at once (see `tasks`).
//!
//! Layout 4 adds the redeemed single-use tokens (`carmy_core::RedemptionStore`): `redeemed`
//! by principal, issue instant and nonce, `redeemers` with each principal's floor, and the
//! `redeem` function that decides a redemption in one statement (see `redemptions`).
//!
//! Layout 5 adds the rate-limit buckets (`carmy_core::RateLimitStore`): `rate_buckets` by tool
//! and principal, each row the instant its bucket is full again (by the server's clock), and
//! the `take_rate` function that decides a call in one statement (see `rate_limits`). A row
//! past its instant is a full bucket, the same as none: the sweep deletes it.
//!
//! Layout 6 adds the `claim` and `finish` functions: the common case of a claim, and a finish,
//! each in one statement (see `claims`); no table changes.
//!
//! `meta` holds the layout's version. Connecting takes a transaction-scoped advisory lock
//! named for the schema, then creates or migrates the layout in that same transaction: replicas
//! starting at once take turns, the first does the work, and the others find it done. A schema
//! of layout 1 gains the records tables in place, one of layout 2 the tasks tables and one of
//! layout 3 the redemption tables, one of layout
//! 4 the rate-limit buckets, one of layout 5 the functions of layout 6, its claims and records untouched: replicas of the previous release that are connected keep
//! working through it (a migration only adds tables, functions and triggers, and locks nothing
//! they use), and one that connects afterwards refuses the newer layout. A layout newer than
//! this code is refused rather than written to.

use deadpool_postgres::Object;

use super::error::Failure;

/// The layout this code writes.
pub(super) const VERSION: i32 = 6;

// The states of a claim row. The statements in `sql` and the triggers below write them as
// the literals 0, 1 and 2: a table's meaning is fixed by its layout's version, not by the code.

/// A claim held under a lease.
pub(super) const HELD: i16 = 0;
/// Finished: `outcome` is kept for replay.
pub(super) const FINISHED: i16 = 1;
/// Interrupted after it may have had effects: `status` says how.
pub(super) const UNCERTAIN: i16 = 2;

/// How many rows the totals are split across. Enough that claims of different principals seldom
/// wait on one another's counts; few enough that summing them is one small read.
pub(super) const SLOTS: i32 = 64;

/// Each migration, in order: `MIGRATIONS[n]` takes the layout from version `n` to `n + 1`.
/// `{s}` is the schema (quoted), `{channel}` the NOTIFY channel, `{slots}` [`SLOTS`].
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE {s}.claims (
    principal   bytea       NOT NULL,
    request_id  bytea       NOT NULL,
    fingerprint bytea       NOT NULL,
    state       smallint    NOT NULL,
    -- held: the holder's lease token (16 bytes) and, if it is lost, the status to keep the key
    -- as uncertain with (NULL: forget the claim).
    token       bytea,
    if_lost     text,
    -- held: when the lease runs out; settled: when the key is forgotten.
    expires_at  timestamptz NOT NULL,
    -- uncertain: the status retries are told.
    status      text,
    -- finished: the outcome (crate::outcome's JSON, as text: jsonb would reorder its keys).
    outcome     text,
    -- what the key counts for in its principal's share.
    bytes       bigint      NOT NULL,
    -- held: a claim saw it running, so someone may be waiting for it to settle.
    watched     boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (principal, request_id),
    CHECK ((state = 0) = (token IS NOT NULL))
);
CREATE INDEX claims_expiry ON {s}.claims (expires_at);

CREATE TABLE {s}.shares (
    principal bytea  PRIMARY KEY,
    entries   bigint NOT NULL,
    bytes     bigint NOT NULL
);
CREATE TABLE {s}.totals (
    slot    integer PRIMARY KEY,
    entries bigint  NOT NULL,
    bytes   bigint  NOT NULL
);
INSERT INTO {s}.totals SELECT slot, 0, 0 FROM generate_series(0, {slots} - 1) AS slot;

-- The totals row a principal's keys count in.
CREATE FUNCTION {s}.slot_of(principal bytea) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT get_byte(sha256(principal), 0) % {slots} $$;

-- What a settled key is announced as: its parts, unambiguously joined, hashed to fit NOTIFY's
-- payload whatever their length (the store computes the same tag for the keys it waits on).
CREATE FUNCTION {s}.tag_of(principal bytea, request_id bytea) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT encode(sha256(int4send(length(principal)) || principal || request_id), 'hex') $$;

CREATE FUNCTION {s}.count_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.shares AS share (principal, entries, bytes)
            VALUES (NEW.principal, 1, NEW.bytes)
            ON CONFLICT (principal)
            DO UPDATE SET entries = share.entries + 1, bytes = share.bytes + EXCLUDED.bytes;
        UPDATE {s}.totals SET entries = entries + 1, bytes = bytes + NEW.bytes
            WHERE slot = {s}.slot_of(NEW.principal);
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE {s}.shares SET entries = entries - 1, bytes = bytes - OLD.bytes
            WHERE principal = OLD.principal;
        DELETE FROM {s}.shares WHERE principal = OLD.principal AND entries <= 0;
        UPDATE {s}.totals SET entries = entries - 1, bytes = bytes - OLD.bytes
            WHERE slot = {s}.slot_of(OLD.principal);
    ELSIF NEW.bytes <> OLD.bytes THEN
        UPDATE {s}.shares SET bytes = bytes + NEW.bytes - OLD.bytes
            WHERE principal = NEW.principal;
        UPDATE {s}.totals SET bytes = bytes + NEW.bytes - OLD.bytes
            WHERE slot = {s}.slot_of(NEW.principal);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER counted AFTER INSERT OR DELETE OR UPDATE OF bytes ON {s}.claims
    FOR EACH ROW EXECUTE FUNCTION {s}.count_claim();

-- A held claim that ends (finished, released, settled as its terms say, forgotten) while
-- someone may wait for it is announced at commit to every store listening, so their waiters
-- claim again at once. Only watched claims: PostgreSQL makes the commits of notifying
-- transactions take turns (across the whole server), a price not worth paying for the many
-- claims that end with nobody waiting.
CREATE FUNCTION {s}.announce_settled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.state = 0 AND OLD.watched AND (TG_OP = 'DELETE' OR NEW.state <> 0) THEN
        PERFORM pg_notify('{channel}', {s}.tag_of(OLD.principal, OLD.request_id));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER announced AFTER DELETE OR UPDATE OF state ON {s}.claims
    FOR EACH ROW EXECUTE FUNCTION {s}.announce_settled();
"#,
    r#"
-- The application's records (carmy_core::records). Names are bytea, as in `claims`: they
-- compare bytewise whatever the database's encoding and collation, which is the order a
-- listing promises. A value is its JSON text as serde_json wrote it, so it reads back exactly:
-- jsonb would refuse a string holding \u0000, and rewrite numbers (-0.0 loses its sign).
CREATE TABLE {s}.records (
    collection bytea  NOT NULL,
    key        bytea  NOT NULL,
    value      text   NOT NULL,
    -- the stamp of the commit that wrote it.
    version    bigint NOT NULL,
    PRIMARY KEY (collection, key)
);

-- One row per collection that a commit wrote into or checked: the stamp of the last commit
-- that wrote into it (0: none yet). Its row lock is what commits take turns on (see
-- `records`); rows are never deleted, so a lock always has a row to hold.
CREATE TABLE {s}.collections (
    collection bytea  PRIMARY KEY,
    version    bigint NOT NULL
);

-- Where the stamps come from (see `records` for why a sequence and not a counter row).
CREATE SEQUENCE {s}.record_stamp AS bigint MINVALUE 1 NO CYCLE;
"#,
    r#"
-- Tasks (carmy_core::TaskStore). Principal and id are bytea, as in `claims`.
CREATE TABLE {s}.tasks (
    principal  bytea       NOT NULL,
    id         bytea       NOT NULL,
    -- the record: crate::task_record's JSON, as text (jsonb would rewrite the outcome's numbers).
    record     text        NOT NULL,
    -- running: the holder's lease token (16 bytes); NULL once the task ended.
    token      bytea,
    -- running: when the lease runs out; ended: when the task is forgotten.
    expires_at timestamptz NOT NULL,
    -- how many writes the holder must act on (a cancel request, answers) the task has had.
    signal     bigint      NOT NULL DEFAULT 0,
    -- what the task counts for in its principal's share.
    bytes      bigint      NOT NULL,
    PRIMARY KEY (principal, id),
    CHECK (token IS NULL OR length(token) = 16)
);
CREATE INDEX tasks_expiry ON {s}.tasks (expires_at);

CREATE TABLE {s}.task_shares (
    principal bytea  PRIMARY KEY,
    tasks     bigint NOT NULL,
    bytes     bigint NOT NULL
);
CREATE TABLE {s}.task_totals (
    slot  integer PRIMARY KEY,
    tasks bigint  NOT NULL,
    bytes bigint  NOT NULL
);
INSERT INTO {s}.task_totals SELECT slot, 0, 0 FROM generate_series(0, {slots} - 1) AS slot;

CREATE FUNCTION {s}.count_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.task_shares AS share (principal, tasks, bytes)
            VALUES (NEW.principal, 1, NEW.bytes)
            ON CONFLICT (principal)
            DO UPDATE SET tasks = share.tasks + 1, bytes = share.bytes + EXCLUDED.bytes;
        UPDATE {s}.task_totals SET tasks = tasks + 1, bytes = bytes + NEW.bytes
            WHERE slot = {s}.slot_of(NEW.principal);
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE {s}.task_shares SET tasks = tasks - 1, bytes = bytes - OLD.bytes
            WHERE principal = OLD.principal;
        DELETE FROM {s}.task_shares WHERE principal = OLD.principal AND tasks <= 0;
        UPDATE {s}.task_totals SET tasks = tasks - 1, bytes = bytes - OLD.bytes
            WHERE slot = {s}.slot_of(OLD.principal);
    ELSIF NEW.bytes <> OLD.bytes THEN
        UPDATE {s}.task_shares SET bytes = bytes + NEW.bytes - OLD.bytes
            WHERE principal = NEW.principal;
        UPDATE {s}.task_totals SET bytes = bytes + NEW.bytes - OLD.bytes
            WHERE slot = {s}.slot_of(NEW.principal);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER counted AFTER INSERT OR DELETE OR UPDATE OF bytes ON {s}.tasks
    FOR EACH ROW EXECUTE FUNCTION {s}.count_task();

-- A write the holder of a running task must act on is announced at commit, under the task's
-- tag (`task:` and the tag of its principal and id), so the replica holding it renews at once.
-- Only those: cancels and answers are rare, and notifying commits take turns server-wide.
CREATE FUNCTION {s}.announce_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.signal <> OLD.signal AND NEW.token IS NOT NULL THEN
        PERFORM pg_notify('{channel}', 'task:' || {s}.tag_of(NEW.principal, NEW.id));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER announced AFTER UPDATE OF signal ON {s}.tasks
    FOR EACH ROW EXECUTE FUNCTION {s}.announce_task();
"#,
    r#"
-- Layout 4: the redeemed single-use tokens (see `redemptions`). Instants are the callers'
-- wall clocks in milliseconds since the epoch, as the caller of a redemption gives them; each
-- `u64` is kept in an int8 in the same order (its top bit flipped).
CREATE TABLE {s}.redeemed (
    principal  bytea NOT NULL,
    issued_at  int8  NOT NULL,
    nonce      int8  NOT NULL,
    expires_at int8  NOT NULL,
    PRIMARY KEY (principal, issued_at, nonce)
);
CREATE INDEX redeemed_expiry ON {s}.redeemed (expires_at);
-- One row per principal holding records: its floor (tokens as old or older are refused, their
-- records may have been let go) and the expiry of its newest record.
CREATE TABLE {s}.redeemers (
    principal   bytea PRIMARY KEY,
    floor_at    int8,
    floor_nonce int8,
    expires_at  int8  NOT NULL
);
CREATE INDEX redeemers_expiry ON {s}.redeemers (expires_at);

-- Redeems one token, in the one statement that calls it: 'redeemed', 'used', 'superseded' or
-- 'crowded'. Locks, in order: the principal's `redeemers` row, then its `redeemed` rows; a new
-- principal first takes a transaction-scoped advisory lock, so new principals take turns and
-- their bound is exact; expired principals are forgotten with `SKIP LOCKED`, never waiting.
-- `cutoff`: tokens issued at or before it are expired (NULL: none).
CREATE FUNCTION {s}.redeem(
    p bytea, at int8, n int8, cutoff int8, expires int8, now_ms int8,
    per_principal int8, most_principals int8
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    redeemer {s}.redeemers%ROWTYPE;
    inserted int8;
    held int8;
    oldest record;
BEGIN
    -- Now and then, a few principals whose every record expired are forgotten with them.
    WITH gone AS (
        DELETE FROM {s}.redeemers WHERE principal IN (
            SELECT principal FROM {s}.redeemers
            WHERE expires_at <= now_ms AND principal <> p
            ORDER BY expires_at LIMIT 16 FOR UPDATE SKIP LOCKED)
        RETURNING principal)
    DELETE FROM {s}.redeemed USING gone WHERE redeemed.principal = gone.principal;

    SELECT * INTO redeemer FROM {s}.redeemers WHERE principal = p FOR UPDATE;
    IF NOT FOUND THEN
        IF p <> '' THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('carmy-store redeemers {s}', 0));
            IF (SELECT count(*) FROM {s}.redeemers WHERE principal <> '') >= most_principals THEN
                WITH gone AS (
                    DELETE FROM {s}.redeemers WHERE principal IN (
                        SELECT principal FROM {s}.redeemers
                        WHERE expires_at <= now_ms FOR UPDATE SKIP LOCKED)
                    RETURNING principal)
                DELETE FROM {s}.redeemed USING gone WHERE redeemed.principal = gone.principal;
                IF (SELECT count(*) FROM {s}.redeemers WHERE principal <> '')
                    >= most_principals THEN
                    RETURN 'crowded';
                END IF;
            END IF;
        END IF;
        INSERT INTO {s}.redeemers VALUES (p, NULL, NULL, expires)
            ON CONFLICT (principal) DO NOTHING;
        SELECT * INTO redeemer FROM {s}.redeemers WHERE principal = p FOR UPDATE;
    END IF;

    IF redeemer.floor_at <= cutoff THEN
        redeemer.floor_at := NULL;
        redeemer.floor_nonce := NULL;
    END IF;
    DELETE FROM {s}.redeemed WHERE principal = p AND issued_at <= cutoff;
    IF redeemer.floor_at IS NOT NULL
        AND (at, n) <= (redeemer.floor_at, redeemer.floor_nonce) THEN
        RETURN 'superseded';
    END IF;
    INSERT INTO {s}.redeemed VALUES (p, at, n, expires) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    IF inserted = 0 THEN
        RETURN 'used';
    END IF;
    SELECT count(*) INTO held FROM {s}.redeemed WHERE principal = p;
    IF held > per_principal THEN
        -- The oldest record is newer than the floor, so the floor only moves forward.
        SELECT issued_at, nonce INTO oldest FROM {s}.redeemed WHERE principal = p
            ORDER BY issued_at, nonce LIMIT 1;
        DELETE FROM {s}.redeemed
            WHERE principal = p AND issued_at = oldest.issued_at AND nonce = oldest.nonce;
        redeemer.floor_at := oldest.issued_at;
        redeemer.floor_nonce := oldest.nonce;
    END IF;
    UPDATE {s}.redeemers
        SET floor_at = redeemer.floor_at, floor_nonce = redeemer.floor_nonce,
            expires_at = greatest(expires_at, expires)
        WHERE principal = p;
    RETURN 'redeemed';
END
$$;
"#,
    r#"
-- Layout 5: the rate-limit buckets shared by replicas (see `rate_limits`). Tool and principal
-- are bytea, as in `claims` (the anonymous principal is empty). `full_at`: the bucket's
-- theoretical arrival time, when it is full again, by the server's clock.
CREATE TABLE {s}.rate_buckets (
    tool      bytea       NOT NULL,
    principal bytea       NOT NULL,
    full_at   timestamptz NOT NULL,
    PRIMARY KEY (tool, principal)
);
CREATE INDEX rate_buckets_full ON {s}.rate_buckets (full_at);

-- Takes one call from the bucket of tool `t` and principal `p`, in the one statement that
-- calls it (GCRA, as carmy_core's buckets): 0 when admitted, else the wait in microseconds.
-- `step`: one call's emission interval; `tolerance`: step × (burst − 1), both microseconds.
-- The upsert locks the bucket's row whether or not its WHERE admits the call, so concurrent
-- takes of one bucket, from any replica, take turns on it.
CREATE FUNCTION {s}.take_rate(t bytea, p bytea, step int8, tolerance int8)
    RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    now_at timestamptz := statement_timestamp();
    step_at interval := step * interval '1 microsecond';
    tolerance_at interval := tolerance * interval '1 microsecond';
    tat timestamptz;
BEGIN
    INSERT INTO {s}.rate_buckets AS bucket VALUES (t, p, now_at + step_at)
        ON CONFLICT (tool, principal) DO UPDATE
        SET full_at = greatest(bucket.full_at, now_at) + step_at
        WHERE bucket.full_at - tolerance_at <= now_at
        RETURNING full_at INTO tat;
    IF FOUND THEN
        RETURN 0;
    END IF;
    SELECT full_at INTO tat FROM {s}.rate_buckets WHERE tool = t AND principal = p;
    RETURN greatest(1, ceil(extract(epoch FROM tat - tolerance_at - now_at) * 1000000))::int8;
END
$$;
"#,
    r#"
-- Layout 6: a claim and a finish in one statement each, one round trip and one transaction
-- (see `claims`). They take the locks the statements they replace took, in the same order.

-- Claims the key `p`/`r` when nothing has to be settled or made room for first: 'acquired'
-- (held under the lease token `t` for `lease_ms`); 'seen', with the key's row, when it is
-- held (then marked watched, as `claims::claim` does), finished, uncertain or another call's;
-- 'slow' when the caller must take the long way (`claims::claim`), having changed nothing: the
-- row is due, the totals look full, another claim inserted the key since the lookup, or the
-- insert took the share over its bounds (the row is deleted again, and its trigger takes the
-- counts back).
CREATE FUNCTION {s}.claim(
    p bytea, r bytea, f bytea, t bytea, lost text, lease_ms int8, weight int8,
    most_entries int8, most_bytes int8, most_held int8, most_weight int8,
    OUT kind text, OUT kept_fingerprint bytea, OUT kept_state smallint, OUT kept_token bytea,
    OUT kept_status text, OUT kept_outcome text, OUT kept_left_ms int8
) LANGUAGE plpgsql AS $$
DECLARE
    kept record;
    share record;
BEGIN
    SELECT c.fingerprint, c.state, c.token, c.status, c.outcome, c.watched,
           c.expires_at <= statement_timestamp() AS due,
           greatest(0, ceil(extract(epoch FROM c.expires_at - statement_timestamp()) * 1000))::int8
               AS left_ms
        INTO kept FROM {s}.claims AS c WHERE c.principal = p AND c.request_id = r FOR UPDATE;
    IF FOUND THEN
        IF kept.due THEN
            kind := 'slow';
            RETURN;
        END IF;
        IF kept.state = 0 AND kept.fingerprint = f AND NOT kept.watched THEN
            UPDATE {s}.claims SET watched = true WHERE principal = p AND request_id = r;
        END IF;
        kind := 'seen';
        kept_fingerprint := kept.fingerprint;
        kept_state := kept.state;
        kept_token := kept.token;
        kept_status := kept.status;
        kept_outcome := kept.outcome;
        kept_left_ms := kept.left_ms;
        RETURN;
    END IF;
    IF (SELECT coalesce(sum(entries), 0) >= most_entries
               OR coalesce(sum(bytes), 0) + weight > most_bytes
        FROM {s}.totals) THEN
        kind := 'slow';
        RETURN;
    END IF;
    INSERT INTO {s}.claims (principal, request_id, fingerprint, state, token, if_lost,
                            expires_at, bytes)
        VALUES (p, r, f, 0, t, lost, statement_timestamp() + lease_ms * interval '1 millisecond',
                weight)
        ON CONFLICT (principal, request_id) DO NOTHING;
    IF NOT FOUND THEN
        kind := 'slow';
        RETURN;
    END IF;
    SELECT entries, bytes INTO share FROM {s}.shares WHERE principal = p FOR UPDATE;
    IF share.entries > most_held OR share.bytes > most_weight THEN
        DELETE FROM {s}.claims WHERE principal = p AND request_id = r;
        kind := 'slow';
        RETURN;
    END IF;
    kind := 'acquired';
END
$$;

-- Finishes the key `p`/`r` held under the lease token `t`: false, changing nothing, when the
-- lease no longer holds it. `outcome` is kept when its `size` bytes fit the bound of one
-- outcome, the principal's share and the totals; else `note`, which says the call ran.
CREATE FUNCTION {s}.finish(
    p bytea, r bytea, t bytea, outcome text, note text, size int8, ttl_ms int8,
    most_outcome int8, most_weight int8, most_bytes int8
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    held int8;
    total int8;
    kept text;
BEGIN
    PERFORM FROM {s}.claims
        WHERE principal = p AND request_id = r AND state = 0 AND token = t FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    SELECT bytes INTO held FROM {s}.shares WHERE principal = p FOR UPDATE;
    SELECT coalesce(sum(bytes), 0) INTO total FROM {s}.totals;
    kept := CASE WHEN size <= most_outcome AND coalesce(held, 0) + size <= most_weight
                      AND total + size <= most_bytes
                 THEN outcome ELSE note END;
    UPDATE {s}.claims
        SET state = 1, outcome = kept, bytes = bytes + octet_length(kept), token = NULL,
            if_lost = NULL, expires_at = statement_timestamp() + ttl_ms * interval '1 millisecond'
        WHERE principal = p AND request_id = r;
    RETURN true;
END
$$;
"#,
];

/// `schema` as an identifier in SQL. Options allow only lowercase letters, digits and `_`, so
/// quoting is all it takes (and keeps names like `user` usable).
pub(super) fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}

/// The NOTIFY channel of the stores in `schema` (channels are per database).
pub(super) fn channel(schema: &str) -> String {
    format!("{schema}_settled")
}

/// The channel the replicas on `schema` tell each other their resource changes on.
pub(super) fn changes_channel(schema: &str) -> String {
    format!("{schema}_changes")
}

/// Creates the layout in `schema`, or migrates it to [`VERSION`], under the schema's advisory
/// lock; fails if it is newer than this code or is not a store's.
pub(super) async fn migrate(connection: &mut Object, schema: &str) -> Result<(), Failure> {
    let s = quoted(schema);
    let transaction = connection.transaction().await?;
    // Held until the transaction ends, so it cannot outlive a crashed replica's migration.
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&format!("carmy-store migrate {schema}")],
        )
        .await?;
    let has_meta: bool = transaction
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{s}.meta")],
        )
        .await?
        .get(0);
    let version = if has_meta {
        let row = transaction
            .query_opt(&format!("SELECT version FROM {s}.meta WHERE id = 0"), &[])
            .await?;
        row.map(|row| row.get::<_, i32>(0)).ok_or_else(|| {
            Failure::Invalid(format!(
                "the schema `{schema}` has a meta table without a version: not a carmy store"
            ))
        })?
    } else {
        // CREATE SCHEMA needs the CREATE privilege on the database even with IF NOT EXISTS;
        // an operator may have created the schema for a role that has no more than that.
        let exists: bool = transaction
            .query_one(
                "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)",
                &[&schema],
            )
            .await?
            .get(0);
        if !exists {
            transaction
                .batch_execute(&format!("CREATE SCHEMA {s}"))
                .await?;
        }
        transaction
            .batch_execute(&format!(
                "CREATE TABLE {s}.meta (id integer PRIMARY KEY CHECK (id = 0), \
                 version integer NOT NULL); INSERT INTO {s}.meta VALUES (0, 0);"
            ))
            .await?;
        0
    };
    if version > VERSION {
        return Err(Failure::Invalid(format!(
            "the schema `{schema}` has layout {version}, newer than this program's \
             ({VERSION}): upgrade the program, or use another schema"
        )));
    }
    let slots = SLOTS.to_string();
    let channel = channel(schema);
    let done = usize::try_from(version).unwrap_or(0);
    for (to, migration) in (1..).zip(MIGRATIONS.iter()).skip(done) {
        let sql = migration
            .replace("{s}", &s)
            .replace("{channel}", &channel)
            .replace("{slots}", &slots);
        transaction.batch_execute(&sql).await?;
        transaction
            .execute(
                &format!("UPDATE {s}.meta SET version = $1 WHERE id = 0"),
                &[&to],
            )
            .await?;
    }
    transaction.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_version_counts_the_migrations() {
        assert_eq!(usize::try_from(VERSION).unwrap(), MIGRATIONS.len());
    }
}
