//! The application's records on the server (see `carmy_core::records`): a read is one `HGET`,
//! a listing one small script, a commit one script that checks, applies and finishes the lease
//! (or records a request never claimed) together (`lua/commit.lua`). The layout is in `keys`.
//!
//! A record's field holds its version and its value together, `<version>:<JSON text>`, so
//! that whatever reads it gets a value and the version of the commit that wrote it.

use std::collections::HashMap;

use carmy_core::{
    Fingerprint, IdempotencyKey, Lease, Recorded, StoreError,
    records::{
        Changes, Committed, Listing, MAX_LISTED, RecordKey, RecordStore, UnclaimedCommit, Versioned,
    },
};
use serde_json::Value;

use super::{
    Outcome, RedisStore, key_bytes,
    scripts::{Applied, ClaimArgs, Commit, Listed, Settled, Settling},
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
            return match self
                .scripts
                .commit(&self.link, &commit, Settling::Nothing)
                .await?
            {
                Applied::Done => Ok(Committed::Done),
                Applied::Conflict => Ok(Committed::Conflict),
                // Nothing to lose or record without a lease: a script that says so is not
                // this one.
                _ => Err(StoreError::unavailable(
                    "the commit script answered for a request where none was sent",
                )),
            };
        };
        let names = self.keys.of(lease.key());
        let outcome = Outcome::of(lease, recorded)?;
        let finish = outcome.finish(&self.options);
        match self
            .scripts
            .commit(&self.link, &commit, Settling::Lease(&names, &finish))
            .await?
        {
            Applied::Done => {
                self.settled(lease, Settled::Done)?;
                Ok(Committed::Done)
            }
            Applied::Conflict => Ok(Committed::Conflict),
            Applied::Lost => Err(StoreError::LeaseLost),
            Applied::Taken | Applied::Full { .. } => Err(StoreError::unavailable(
                "the commit script answered as if recording a request under a lease",
            )),
        }
    }

    async fn unclaimed(&self, key: &IdempotencyKey) -> Result<bool, StoreError> {
        // The request's hash lives exactly as long as the store keeps the request.
        let request = self.keys.of(key).request;
        let exists: bool = self
            .link
            .run("request lookup", |mut connection, _| {
                let request = &request;
                async move {
                    redis::cmd("EXISTS")
                        .arg(request)
                        .query_async(&mut connection)
                        .await
                }
            })
            .await
            .map_err(StoreError::unavailable)?;
        Ok(!exists)
    }

    async fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> Result<UnclaimedCommit, StoreError> {
        let stamp = self.keys.stamp();
        let commit = self.commit_of(changes, &stamp)?;
        let names = self.keys.of(key);
        // The token the request is recorded as settled by, so that the commit sent again after
        // its answer was lost knows it for its own.
        let lease = Lease::new(key.clone(), uuid::Uuid::new_v4().as_u128());
        let outcome = Outcome::of(&lease, recorded)?;
        let finish = outcome.finish(&self.options);
        let bounds = &self.options.request_ids;
        let claim = ClaimArgs {
            fingerprint: fingerprint.as_bytes(),
            token: &outcome.token,
            lease: std::time::Duration::ZERO,
            if_lost: "",
            ttl: self.options.ttl,
            weight: key_bytes(&names),
            max_entries_per_principal: bounds.max_per_principal,
            max_bytes_per_principal: bounds.max_bytes_per_principal,
            max_entries: bounds.max,
            max_bytes: bounds.max_bytes,
        };
        let settling = Settling::Unclaimed(&names, &finish, &claim);
        match self.scripts.commit(&self.link, &commit, settling).await? {
            Applied::Done => {
                self.waiters.wake(key);
                Ok(UnclaimedCommit::Done)
            }
            Applied::Conflict => Ok(UnclaimedCommit::Conflict),
            Applied::Taken => Ok(UnclaimedCommit::Taken),
            Applied::Full {
                total: false,
                entries,
                bytes,
            } => Err(StoreError::share_full(entries, bytes, self.options.ttl)),
            Applied::Full { total: true, .. } => Err(StoreError::totals_full()),
            Applied::Lost => Err(StoreError::unavailable(
                "the commit script found a lease lost where none was sent",
            )),
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
