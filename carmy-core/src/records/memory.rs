//! [`MemoryStore`]'s records: a map in this process's memory, committed under the store's lock
//! together with the outcome, so a commit and its outcome are one step here too.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Mutex, MutexGuard},
};

use serde_json::Value;

use super::{Changes, Committed, Listing, MAX_LISTED, RecordKey, RecordStore, Versioned};
use crate::idempotency::{Lease, MemoryStore, Recorded, StoreError};

/// The records of one [`MemoryStore`].
#[derive(Debug, Default)]
pub(crate) struct MemoryRecords {
    /// By collection, then key (ordered, for listings): the value and its version.
    collections: HashMap<String, Collection>,
    /// The stamp of the last commit that wrote.
    stamp: u64,
}

#[derive(Debug, Default)]
struct Collection {
    records: BTreeMap<String, (Value, u64)>,
    /// The stamp of the last commit that wrote into this collection.
    version: u64,
}

impl MemoryRecords {
    fn read(&self, key: &RecordKey) -> Versioned {
        self.collections
            .get(key.collection())
            .and_then(|collection| collection.records.get(key.key()))
            .map_or(Versioned::ABSENT, |(value, version)| Versioned {
                value: Some(value.clone()),
                version: *version,
            })
    }

    fn version_of(&self, key: &RecordKey) -> u64 {
        self.collections
            .get(key.collection())
            .and_then(|collection| collection.records.get(key.key()))
            .map_or(0, |(_, version)| *version)
    }

    fn collection_version(&self, collection: &str) -> u64 {
        self.collections
            .get(collection)
            .map_or(0, |collection| collection.version)
    }

    /// Whether everything `changes` read is still as it was.
    fn unchanged(&self, changes: &Changes) -> bool {
        changes
            .reads
            .iter()
            .all(|(key, seen)| self.version_of(key) == *seen)
            && changes
                .listed
                .iter()
                .all(|(collection, seen)| self.collection_version(collection) == *seen)
    }

    fn apply(&mut self, changes: &Changes) {
        if changes.writes.is_empty() {
            return;
        }
        self.stamp += 1;
        let stamp = self.stamp;
        for (key, value) in &changes.writes {
            let collection = self
                .collections
                .entry(key.collection().to_owned())
                .or_default();
            // Kept even once empty: a listing of it is checked against this version.
            collection.version = stamp;
            match value {
                Some(value) => {
                    collection
                        .records
                        .insert(key.key().to_owned(), (value.clone(), stamp));
                }
                None => {
                    collection.records.remove(key.key());
                }
            }
        }
    }
}

impl MemoryStore {
    fn record_map(&self) -> MutexGuard<'_, MemoryRecords> {
        // No invariant spans a call out while the lock is held: a poisoned lock is consistent.
        lock(&self.records)
    }
}

fn lock(records: &Mutex<MemoryRecords>) -> MutexGuard<'_, MemoryRecords> {
    records
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RecordStore for MemoryStore {
    async fn read(&self, key: &RecordKey) -> Result<Versioned, StoreError> {
        Ok(self.record_map().read(key))
    }

    async fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        let records = self.record_map();
        let Some(kept) = records.collections.get(collection) else {
            return Ok(Listing::default());
        };
        if kept.records.len() > MAX_LISTED {
            return Err(StoreError::Full(format!(
                "the collection `{collection}` holds more than {MAX_LISTED} records to list"
            )));
        }
        Ok(Listing {
            version: kept.version,
            records: kept
                .records
                .iter()
                .map(|(key, (value, _))| (key.clone(), value.clone()))
                .collect(),
        })
    }

    async fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        let Some((lease, recorded)) = outcome else {
            let mut records = self.record_map();
            if !records.unchanged(changes) {
                return Ok(Committed::Conflict);
            }
            records.apply(changes);
            return Ok(Committed::Done);
        };
        // The records are locked inside the store's own lock, once the lease is known to hold:
        // the writes and the outcome land together.
        let applied = self.finish_then(lease, recorded.clone(), || {
            let mut records = lock(&self.records);
            if !records.unchanged(changes) {
                return false;
            }
            records.apply(changes);
            true
        })?;
        Ok(if applied {
            Committed::Done
        } else {
            Committed::Conflict
        })
    }
}
