//! Records: the application's own data, kept by the same store as the execution records, so a
//! tool's writes and its outcome commit together.
//!
//! "Interrupted, maybe committed" (`EXECUTION_UNCERTAIN`) exists because a write tool's effects
//! and the record of its outcome usually live in two places: a crash between the two leaves
//! the effects without the record. A tool declared `transactional` keeps its effects in
//! [`Records`] instead, and the runtime commits them **in the same store transaction that
//! records its outcome** ([`RecordStore::commit`]). A crash leaves both or neither, so a retry
//! gets the committed outcome or runs again cleanly: never uncertainty, never a double effect.
//!
//! # The model: optimistic transactions
//!
//! A transactional tool's reads go to the store (each read remembers the version it saw), its
//! writes are kept in memory, and nothing touches the store until the tool returns. The commit
//! then checks, atomically, that every record the tool read is still at the version it saw,
//! applies the writes and records the outcome under the call's lease. If another execution
//! (on this replica or another) changed a record in between, the commit applies nothing and
//! the runtime runs the tool again, on fresh reads, within the same deadline. No lock or
//! connection is held while the tool runs, so a slow tool never blocks a database, and the
//! same model works on every store: memory, SQLite, PostgreSQL, Redis.
//!
//! What that asks of a tool: between its first read and its return, its only effects are its
//! writes to [`Records`] (it may run more than once; only one run commits). A tool that also
//! sends an email is not transactional: it stays `external_write`.
//!
//! # Versions
//!
//! Every commit that writes takes the next number of one counter of the store, and stamps each
//! record it writes with it; a collection carries the stamp of the last commit that wrote into
//! it (deletions included), so a listing is checked as a whole. An absent record has version
//! 0. Stamps only grow, so a record deleted and written again never looks unchanged.

mod memory;
pub(crate) mod transaction;

use std::{future::Future, pin::Pin, sync::Arc};

use serde_json::Value;

use crate::idempotency::{
    Fingerprint, IdempotencyKey, IdempotencyStore, Lease, Recorded, StoreError,
};

pub(crate) use memory::MemoryRecords;
pub use transaction::Records;

/// The longest collection name, in bytes.
pub const MAX_COLLECTION_LEN: usize = 64;
/// The longest record key, in bytes.
pub const MAX_RECORD_KEY_LEN: usize = 256;
/// The largest record value, as JSON text.
pub const MAX_RECORD_BYTES: usize = 1 << 20;
/// The most records one listing returns; a larger collection is refused rather than cut.
pub const MAX_LISTED: usize = 10_000;

/// Where a record lives: a collection (`orders`) and a key in it (`ord-1001`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    collection: Arc<str>,
    key: Arc<str>,
}

impl RecordKey {
    /// The record `key` of `collection`. Names are checked by [`Records`] before a store sees
    /// them: a collection is 1 to 64 bytes of `a-z 0-9 _ - .`, a key 1 to 256 bytes of text.
    pub fn new(collection: &str, key: &str) -> Self {
        Self {
            collection: collection.into(),
            key: key.into(),
        }
    }

    /// The collection.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The key within the collection.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// A record as a store holds it: its value, and the stamp of the commit that wrote it (0 and
/// no value for an absent record).
#[derive(Clone, Debug, PartialEq)]
pub struct Versioned {
    /// The value; `None` when there is no such record.
    pub value: Option<Value>,
    /// The version the commit checks; 0 when absent.
    pub version: u64,
}

impl Versioned {
    /// An absent record.
    pub const ABSENT: Versioned = Versioned {
        value: None,
        version: 0,
    };
}

/// Every record of a collection, by key, with the collection's version.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    /// The stamp of the last commit that wrote into the collection; 0 if none ever did.
    pub version: u64,
    /// The records, ordered by key (bytewise).
    pub records: Vec<(String, Value)>,
}

/// What one run of a transactional tool read and wants to write, for [`RecordStore::commit`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// Each record read, with the version seen.
    pub reads: Vec<(RecordKey, u64)>,
    /// Each collection listed, with the version seen.
    pub listed: Vec<(String, u64)>,
    /// The writes, in key order: a value to put, or `None` to delete.
    pub writes: Vec<(RecordKey, Option<Value>)>,
}

impl Changes {
    /// Whether the run wrote nothing.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
    }
}

/// The answer to [`RecordStore::commit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Committed {
    /// The writes (and the outcome, if given) are committed.
    Done,
    /// A record or collection read has changed since: nothing was applied, and the lease, if
    /// any, is still held.
    Conflict,
}

/// The answer to [`RecordStore::commit_unclaimed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum UnclaimedCommit {
    /// The writes are committed, and the request id recorded as finished with the outcome.
    Done,
    /// A record or collection read has changed since: nothing was applied, and the request id
    /// is still unclaimed.
    Conflict,
    /// The request id was claimed (or finished) by another call meanwhile: nothing was
    /// applied. The caller claims it as usual, to wait for that call or replay its outcome.
    Taken,
}

/// An [`IdempotencyStore`] that also keeps the application's records, and commits a tool's
/// writes together with its outcome.
///
/// A call under a request id is usually claimed first and committed under its lease: two
/// commits. A store that implements [`unclaimed`](Self::unclaimed) and
/// [`commit_unclaimed`](Self::commit_unclaimed) saves the first: when a look finds the request
/// id unknown, the tool runs without a claim (its effects are only buffered writes, so a run
/// that does not commit did nothing), and one commit records the request id, finished, with the
/// writes and the outcome. The defaults keep every call on the claim path.
///
/// What an implementation promises:
/// - `read` and `list` return committed data only;
/// - `commit` is atomic: either every check passes and every write and the outcome are
///   committed (durably, for a durable store), or nothing is;
/// - `commit` with an outcome applies only while the lease is its key's holder, and fails with
///   [`StoreError::LeaseLost`] otherwise, applying nothing;
/// - versions only grow (see the [module docs](self));
/// - when it cannot answer, it says so ([`StoreError`]) rather than guess.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not keep records",
    label = "not a record store",
    note = "implement `read`, `list` and `commit` of `RecordStore` for `{Self}`, or use `MemoryStore` (or a store of `carmy-store`)"
)]
pub trait RecordStore: IdempotencyStore {
    /// The committed record at `key`.
    fn read(&self, key: &RecordKey) -> impl Future<Output = Result<Versioned, StoreError>> + Send;

    /// Every committed record of `collection`; fails with [`StoreError::Full`] when there are
    /// more than [`MAX_LISTED`].
    fn list(&self, collection: &str) -> impl Future<Output = Result<Listing, StoreError>> + Send;

    /// Checks `changes`' reads, applies its writes and, with `outcome`, finishes the lease with
    /// the recorded outcome, all in one atomic step.
    fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send;

    /// Whether `key` is unknown to the store: never claimed, or forgotten after its retention.
    /// A look, not a claim: it takes nothing and may be stale by the time it is answered.
    ///
    /// The default answers `false`, so a store that does not implement
    /// [`commit_unclaimed`](Self::commit_unclaimed) always has its calls claimed first.
    fn unclaimed(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let _ = key;
        async { Ok(false) }
    }

    /// [`commit`](Self::commit) of a call whose request id was not claimed: in one atomic step,
    /// checks `changes`' reads, claims `key` for `fingerprint` against the same bounds as
    /// [`IdempotencyStore::claim`] (failing with [`StoreError::Full`], applying nothing),
    /// applies the writes, and finishes the key with `recorded` as
    /// [`IdempotencyStore::finish`] would. If `key` is known by then, applies nothing and
    /// answers [`UnclaimedCommit::Taken`]. A store may answer `Taken` too when the bounds ask
    /// for more than the commit does (expired keys to settle, room to make): the claim that
    /// follows then decides, as it does for every call.
    ///
    /// The default answers `Taken`: the call is then claimed as usual.
    fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> impl Future<Output = Result<UnclaimedCommit, StoreError>> + Send {
        let _ = (changes, key, fingerprint, recorded);
        async { Ok(UnclaimedCommit::Taken) }
    }
}

impl<S: RecordStore> RecordStore for Arc<S> {
    fn read(&self, key: &RecordKey) -> impl Future<Output = Result<Versioned, StoreError>> + Send {
        (**self).read(key)
    }

    fn list(&self, collection: &str) -> impl Future<Output = Result<Listing, StoreError>> + Send {
        (**self).list(collection)
    }

    fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send {
        (**self).commit(changes, outcome)
    }

    fn unclaimed(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).unclaimed(key)
    }

    fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> impl Future<Output = Result<UnclaimedCommit, StoreError>> + Send {
        (**self).commit_unclaimed(changes, key, fingerprint, recorded)
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A [`RecordStore`] behind a pointer: each call returns a boxed future.
pub(crate) trait DynRecordStore: Send + Sync + 'static {
    fn read_boxed<'a>(&'a self, key: &'a RecordKey)
    -> BoxFuture<'a, Result<Versioned, StoreError>>;

    fn list_boxed<'a>(&'a self, collection: &'a str) -> BoxFuture<'a, Result<Listing, StoreError>>;

    fn commit_boxed<'a>(
        &'a self,
        changes: &'a Changes,
        outcome: Option<(&'a Lease, &'a Recorded)>,
    ) -> BoxFuture<'a, Result<Committed, StoreError>>;

    fn unclaimed_boxed<'a>(
        &'a self,
        key: &'a IdempotencyKey,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    fn commit_unclaimed_boxed<'a>(
        &'a self,
        changes: &'a Changes,
        key: &'a IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &'a Recorded,
    ) -> BoxFuture<'a, Result<UnclaimedCommit, StoreError>>;
}

impl<S: RecordStore> DynRecordStore for S {
    fn read_boxed<'a>(
        &'a self,
        key: &'a RecordKey,
    ) -> BoxFuture<'a, Result<Versioned, StoreError>> {
        Box::pin(self.read(key))
    }

    fn list_boxed<'a>(&'a self, collection: &'a str) -> BoxFuture<'a, Result<Listing, StoreError>> {
        Box::pin(self.list(collection))
    }

    fn commit_boxed<'a>(
        &'a self,
        changes: &'a Changes,
        outcome: Option<(&'a Lease, &'a Recorded)>,
    ) -> BoxFuture<'a, Result<Committed, StoreError>> {
        Box::pin(self.commit(changes, outcome))
    }
    fn unclaimed_boxed<'a>(
        &'a self,
        key: &'a IdempotencyKey,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.unclaimed(key))
    }

    fn commit_unclaimed_boxed<'a>(
        &'a self,
        changes: &'a Changes,
        key: &'a IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &'a Recorded,
    ) -> BoxFuture<'a, Result<UnclaimedCommit, StoreError>> {
        Box::pin(self.commit_unclaimed(changes, key, fingerprint, recorded))
    }
}
