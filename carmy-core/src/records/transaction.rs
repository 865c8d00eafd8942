//! [`Records`]: what a tool reads and writes, through [`Context::records`](crate::Context::records).

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    sync::{Arc, Mutex},
};

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::{
    Changes, DynRecordStore, MAX_COLLECTION_LEN, MAX_RECORD_BYTES, MAX_RECORD_KEY_LEN, RecordKey,
};
use crate::{
    error::{AgentError, ErrorCategory, codes},
    sync::lock,
};

/// The application's records, as one execution sees them: a collection of JSON values by key,
/// kept by the runtime's store (in memory by default; SQLite, PostgreSQL or Redis with
/// `carmy-store`), shared by every replica on it.
///
/// In a tool declared `transactional`, reads remember what they saw and writes wait for the
/// tool to return; the runtime then commits them together with the call's outcome, or runs the
/// tool again if another execution changed what it read (see the
/// [module docs](crate::records)). Elsewhere (reads, resources, prompts, other tools) the
/// records are read-only: a write fails with `RECORDS_READ_ONLY`.
#[derive(Clone, Default)]
pub struct Records {
    /// `None`: no record store. Cloned per execution: a reference count, no allocation.
    store: Option<Arc<dyn DynRecordStore>>,
    /// `None`: read-only.
    transaction: Option<Arc<Mutex<Pending>>>,
}

/// A `Records` known to have a store.
struct Shared<'a> {
    store: &'a Arc<dyn DynRecordStore>,
    transaction: Option<&'a Arc<Mutex<Pending>>>,
}

/// One run's reads and writes, until the runtime takes them to commit.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The first version seen of each record read from the store.
    reads: HashMap<RecordKey, u64>,
    /// The version seen of each collection listed.
    listed: HashMap<String, u64>,
    writes: BTreeMap<RecordKey, Option<Value>>,
    /// A read failed because the store could not answer: whatever the tool made of it, its
    /// outcome is not one to keep.
    pub(crate) store_failed: bool,
}

impl Pending {
    pub(crate) fn into_changes(self) -> Changes {
        let mut reads: Vec<_> = self.reads.into_iter().collect();
        reads.sort();
        let mut listed: Vec<_> = self.listed.into_iter().collect();
        listed.sort();
        Changes {
            reads,
            listed,
            writes: self.writes.into_iter().collect(),
        }
    }
}

impl Records {
    /// No records: every use fails with `RECORDS_UNAVAILABLE`.
    pub(crate) const fn none() -> Self {
        Self {
            store: None,
            transaction: None,
        }
    }

    /// Read-only records over `store`.
    pub(crate) fn reader(store: Arc<dyn DynRecordStore>) -> Self {
        Self {
            store: Some(store),
            transaction: None,
        }
    }

    /// A transaction over `store`, for one run of a transactional tool.
    pub(crate) fn transaction(store: Arc<dyn DynRecordStore>) -> Self {
        Self {
            store: Some(store),
            transaction: Some(Arc::default()),
        }
    }

    /// Takes what the run read and wrote, leaving nothing behind (a clone the tool kept can
    /// no longer add to this run's changes).
    pub(crate) fn take(&self) -> Pending {
        self.transaction
            .as_ref()
            .map(|pending| std::mem::take(&mut *lock(pending)))
            .unwrap_or_default()
    }

    /// Whether writes are kept for a commit.
    pub fn is_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    /// The record `key` of `collection`, decoded; `None` if there is none.
    pub async fn get<T: DeserializeOwned>(
        &self,
        collection: &str,
        key: &str,
    ) -> Result<Option<T>, AgentError> {
        let record = RecordKey::new(collection, key);
        match self.get_value(collection, key).await? {
            Some(value) => decode(&record, value).map(Some),
            None => Ok(None),
        }
    }

    /// The record `key` of `collection` as JSON; `None` if there is none. In a transaction,
    /// the run's own writes are seen first.
    pub async fn get_value(
        &self,
        collection: &str,
        key: &str,
    ) -> Result<Option<Value>, AgentError> {
        let shared = self.shared()?;
        check_names(collection, None)?;
        if check_names(collection, Some(key)).is_err() {
            // Nothing can be kept under a key no write accepts (a caller's 4 MB order id, say).
            return Ok(None);
        }
        let record = RecordKey::new(collection, key);
        if let Some(pending) = &shared.transaction
            && let Some(written) = lock(pending).writes.get(&record)
        {
            return Ok(written.clone());
        }
        let read = match shared.store.read_boxed(&record).await {
            Ok(read) => read,
            Err(error) => return Err(shared.failed(error)),
        };
        if let Some(pending) = &shared.transaction {
            lock(pending).reads.entry(record).or_insert(read.version);
        }
        Ok(read.value)
    }

    /// Every record of `collection`, decoded, ordered by key. In a transaction, with the run's
    /// own writes applied.
    pub async fn list<T: DeserializeOwned>(
        &self,
        collection: &str,
    ) -> Result<Vec<(String, T)>, AgentError> {
        self.list_values(collection)
            .await?
            .into_iter()
            .map(|(key, value)| {
                let record = RecordKey::new(collection, &key);
                decode(&record, value).map(|value| (key, value))
            })
            .collect()
    }

    /// Every record of `collection` as JSON, ordered by key.
    pub async fn list_values(&self, collection: &str) -> Result<Vec<(String, Value)>, AgentError> {
        let shared = self.shared()?;
        check_names(collection, None)?;
        let listing = match shared.store.list_boxed(collection).await {
            Ok(listing) => listing,
            Err(error) => return Err(shared.failed(error)),
        };
        let Some(pending) = &shared.transaction else {
            return Ok(listing.records);
        };
        let mut pending = lock(pending);
        pending
            .listed
            .entry(collection.to_owned())
            .or_insert(listing.version);
        let mut merged: BTreeMap<String, Value> = listing.records.into_iter().collect();
        for (record, written) in pending.writes.range(RecordKey::new(collection, "")..) {
            if record.collection() != collection {
                break;
            }
            match written {
                Some(value) => merged.insert(record.key().to_owned(), value.clone()),
                None => merged.remove(record.key()),
            };
        }
        Ok(merged.into_iter().collect())
    }

    /// Writes `value` as the record `key` of `collection`, when the tool's transaction commits.
    pub fn put<T: Serialize + ?Sized>(
        &self,
        collection: &str,
        key: &str,
        value: &T,
    ) -> Result<(), AgentError> {
        let value = serde_json::to_value(value).map_err(|error| {
            invalid(format!(
                "the record `{collection}/{key}` cannot be written as JSON: {error}"
            ))
        })?;
        let size = serde_json::to_string(&value).map_or(usize::MAX, |text| text.len());
        if size > MAX_RECORD_BYTES {
            return Err(invalid(format!(
                "the record `{collection}/{key}` is {size} bytes of JSON; at most \
                 {MAX_RECORD_BYTES} are kept"
            )));
        }
        self.write(collection, key, Some(value))
    }

    /// Deletes the record `key` of `collection` (if there is one), when the tool's
    /// transaction commits.
    pub fn delete(&self, collection: &str, key: &str) -> Result<(), AgentError> {
        self.write(collection, key, None)
    }

    fn write(&self, collection: &str, key: &str, value: Option<Value>) -> Result<(), AgentError> {
        let shared = self.shared()?;
        check_names(collection, Some(key))?;
        let Some(pending) = &shared.transaction else {
            return Err(AgentError::new(
                ErrorCategory::Internal,
                codes::RECORDS_READ_ONLY,
                format!(
                    "the record `{collection}/{key}` was written outside a transaction: only a \
                     tool declared `#[tool(..., transactional)]` may write records"
                ),
            ));
        };
        lock(pending)
            .writes
            .insert(RecordKey::new(collection, key), value);
        Ok(())
    }

    fn shared(&self) -> Result<Shared<'_>, AgentError> {
        let transaction = self.transaction.as_ref();
        self.store
            .as_ref()
            .map(|store| Shared { store, transaction })
            .ok_or_else(|| {
                AgentError::new(
                    ErrorCategory::Internal,
                    codes::RECORDS_UNAVAILABLE,
                    "no record store: records are read and written inside an execution of a \
                 runtime whose store keeps records (`Carmy::store`, or the default)",
                )
            })
    }
}

impl Shared<'_> {
    /// A store that could not answer a read: the tool is told it is worth retrying, and the
    /// run is marked so that its outcome is not kept.
    fn failed(&self, error: crate::idempotency::StoreError) -> AgentError {
        if let Some(pending) = &self.transaction {
            lock(pending).store_failed = true;
        }
        error.into_agent_error()
    }
}

impl fmt::Debug for Records {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Records")
            .field("configured", &self.store.is_some())
            .field("transaction", &self.is_transaction())
            .finish()
    }
}

fn decode<T: DeserializeOwned>(record: &RecordKey, value: Value) -> Result<T, AgentError> {
    serde_json::from_value(value).map_err(|error| {
        invalid(format!(
            "the record `{}/{}` is not of the type it is read as: {error}",
            record.collection(),
            record.key()
        ))
    })
}

fn invalid(message: String) -> AgentError {
    AgentError::new(ErrorCategory::Internal, codes::INVALID_RECORD, message)
}

/// A collection is 1 to 64 bytes of `a-z 0-9 _ - .`; a key, 1 to 256 bytes of text without
/// control characters.
fn check_names(collection: &str, key: Option<&str>) -> Result<(), AgentError> {
    let collection_ok = !collection.is_empty()
        && collection.len() <= MAX_COLLECTION_LEN
        && collection
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b));
    if !collection_ok {
        return Err(invalid(format!(
            "`{}` is not a collection name: 1 to {MAX_COLLECTION_LEN} bytes of `a-z 0-9 _ - .`",
            crate::excerpt::excerpt(collection, MAX_COLLECTION_LEN)
        )));
    }
    if let Some(key) = key {
        let key_ok = !key.is_empty()
            && key.len() <= MAX_RECORD_KEY_LEN
            && !key.chars().any(char::is_control);
        if !key_ok {
            return Err(invalid(format!(
                "`{}` is not a record key: 1 to {MAX_RECORD_KEY_LEN} bytes of text without \
                 control characters",
                crate::excerpt::excerpt(key, MAX_RECORD_KEY_LEN)
            )));
        }
    }
    Ok(())
}
