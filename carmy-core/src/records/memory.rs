//! The records table of the in-memory store: a map in this process's memory. It knows nothing
//! of claims: the store that keeps it (`MemoryStore`) sits above, and commits a tool's writes
//! under its claims' lock, so a commit and its outcome are one step there too.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{Changes, Committed, Listing, MAX_LISTED, RecordKey, Versioned};
use crate::idempotency::StoreError;

/// The records of one in-memory store.
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
    /// The record at `key`, absent if there is none.
    pub(crate) fn read(&self, key: &RecordKey) -> Versioned {
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

    /// Every record of `collection`; [`StoreError::Full`] when there are more than
    /// [`MAX_LISTED`].
    pub(crate) fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        let Some(kept) = self.collections.get(collection) else {
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

    /// Applies `changes`' writes if everything it read is still as it was.
    pub(crate) fn commit(&mut self, changes: &Changes) -> Committed {
        if !self.unchanged(changes) {
            return Committed::Conflict;
        }
        self.apply(changes);
        Committed::Done
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
