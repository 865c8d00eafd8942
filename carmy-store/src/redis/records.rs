//! The application's records on the server (see `carmy_core::records`): a read is one `HGET`,
//! a listing one small script, a commit one script that checks, applies and finishes the lease
//! together (`lua/commit.lua`). The layout is in `keys`.
//!
//! A record's field holds its version and its value together, `<version>:<JSON text>`, so
//! that whatever reads it gets a value and the version of the commit that wrote it.

use std::collections::HashMap;

use carmy_core::{
    Lease, Recorded, StoreError,
    records::{Changes, Committed, Listing, MAX_LISTED, RecordKey, RecordStore, Versioned},
};
use serde_json::Value;

use super::{
    Outcome, RedisStore,
    scripts::{Applied, Commit, Listed, Settled},
};

/// The application's records live on the same server as the claims, and a transactional
/// tool's writes commit in the script that records its outcome. Records carry no TTL (see
/// [`RedisStore`]).
impl RecordStore for RedisStore {
    async fn read(&self, key: &RecordKey) -> Result<Versioned, StoreError> {
        let records = self.keys.collection(key.collection()).records;
        let field: Option<String> = self
            .link
            .run("record read", |mut connection, _| {
                let records = &records;
                async move {
                    redis::cmd("HGET")
                        .arg(records)
                        .arg(key.key())
                        .query_async(&mut connection)
                        .await
                }
            })
            .await
            .map_err(StoreError::unavailable)?;
        Ok(match field {
            Some(field) => {
                let (version, value) = parse(&field)?;
                Versioned {
                    value: Some(value),
                    version,
                }
            }
            None => Versioned::ABSENT,
        })
    }

    async fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        let keys = self.keys.collection(collection);
        let (version, fields) = match self.scripts.list(&self.link, &keys, MAX_LISTED).await? {
            Listed::Rows { version, fields } => (version, fields),
            Listed::Full { count } => {
                return Err(StoreError::Full(format!(
                    "the collection `{collection}` holds more than {MAX_LISTED} records to \
                     list ({count})"
                )));
            }
        };
        let mut records = Vec::with_capacity(fields.len() / 2);
        let mut fields = fields.into_iter();
        while let (Some(key), Some(field)) = (fields.next(), fields.next()) {
            records.push((key, parse(&field)?.1));
        }
        // A hash keeps no order: listings are ordered by key, bytewise, as `String`s compare.
        records.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        Ok(Listing {
            version: version
                .parse()
                .map_err(|_| unreadable("collection version"))?,
            records,
        })
    }

    async fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        let stamp = self.keys.stamp();
        let commit = self.commit_of(changes, &stamp)?;
        let Some((lease, recorded)) = outcome else {
            return match self.scripts.commit(&self.link, &commit, None).await? {
                Applied::Done => Ok(Committed::Done),
                Applied::Conflict => Ok(Committed::Conflict),
                // Nothing to lose without a lease: a script that says so is not this one.
                Applied::Lost => Err(StoreError::unavailable(
                    "the commit script found a lease lost where none was sent",
                )),
            };
        };
        let names = self.keys.of(lease.key());
        let outcome = Outcome::of(lease, recorded)?;
        let finish = outcome.finish(&self.options);
        match self
            .scripts
            .commit(&self.link, &commit, Some((&names, &finish)))
            .await?
        {
            Applied::Done => {
                self.settled(lease, Settled::Done)?;
                Ok(Committed::Done)
            }
            Applied::Conflict => Ok(Committed::Conflict),
            Applied::Lost => Err(StoreError::LeaseLost),
        }
    }
}

impl RedisStore {
    /// `changes` as the commit script is sent them: each collection once, numbered from 1 in
    /// the order first met, and each value as JSON text.
    fn commit_of<'a>(
        &self,
        changes: &'a Changes,
        stamp: &'a str,
    ) -> Result<Commit<'a>, StoreError> {
        let mut order: Vec<&str> = Vec::new();
        let mut numbers: HashMap<&str, usize> = HashMap::new();
        let collections = changes
            .reads
            .iter()
            .map(|(key, _)| key.collection())
            .chain(
                changes
                    .listed
                    .iter()
                    .map(|(collection, _)| collection.as_str()),
            )
            .chain(changes.writes.iter().map(|(key, _)| key.collection()));
        for collection in collections {
            numbers.entry(collection).or_insert_with(|| {
                order.push(collection);
                order.len()
            });
        }
        let mut writes = Vec::with_capacity(changes.writes.len());
        for (key, value) in &changes.writes {
            let text = value
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(StoreError::unavailable)?;
            writes.push((numbers[key.collection()], key.key(), text));
        }
        Ok(Commit {
            stamp,
            collections: order
                .iter()
                .map(|collection| self.keys.collection(collection))
                .collect(),
            reads: changes
                .reads
                .iter()
                .map(|(key, seen)| (numbers[key.collection()], key.key(), *seen))
                .collect(),
            listings: changes
                .listed
                .iter()
                .map(|(collection, seen)| (numbers[collection.as_str()], *seen))
                .collect(),
            writes,
        })
    }
}

/// A record's field as kept: its version and its value.
fn parse(field: &str) -> Result<(u64, Value), StoreError> {
    let (version, text) = field.split_once(':').ok_or_else(|| unreadable("record"))?;
    let version = version
        .parse()
        .map_err(|_| unreadable("record's version"))?;
    let value = serde_json::from_str(text).map_err(|error| {
        StoreError::unavailable(format!("a kept record cannot be read: {error}"))
    })?;
    Ok((version, value))
}

fn unreadable(what: &str) -> StoreError {
    // Not what was found: a record is the application's data, and may be large.
    StoreError::unavailable(format!(
        "a kept {what} cannot be read: it is not what this store writes"
    ))
}
