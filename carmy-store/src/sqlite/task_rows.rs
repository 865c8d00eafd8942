//! A task transaction ([`Tx`]) and the rows it works on: a row read and decoded, a lease that ran
//! out settled as lost, a task past its ttl forgotten, a record saved under a new stamp for its
//! holder, and the room a principal's share and the totals have left.

use carmy_core::{StoreError, TaskEnding, TaskKey, TaskLease, TaskRecord};
use rusqlite::{OptionalExtension, Row as SqlRow, Transaction};

use super::{
    failure::{Failure, Result},
    integers::{count, ms},
    options::SqliteStoreOptions,
    task_holders::Wake,
};
use crate::task_record;

/// What a task's row counts for in its principal's share besides its record's text: the key
/// in the table and its indexes, the other columns, the books.
const ROW_BYTES: usize = 256;

/// A task transaction: what it runs in, and whom it wakes once committed.
pub(super) struct Tx<'a> {
    pub(super) transaction: Transaction<'a>,
    pub(super) options: SqliteStoreOptions,
    pub(super) now: i64,
    pub(super) wakes: Vec<Wake>,
}

/// A task's row, its record read.
pub(super) struct Row {
    pub(super) record: TaskRecord,
    /// The holder's lease token, while the task runs.
    pub(super) token: Option<u128>,
    /// While it runs, when the lease runs out; once it ended, when it is forgotten.
    pub(super) expires_at: i64,
    pub(super) signal: i64,
    pub(super) bytes: i64,
}

const COLUMNS: &str = "record, token, expires_at, signal, bytes";

/// [`COLUMNS`] as read, before the record is decoded.
type Columns = (String, Option<Vec<u8>>, i64, i64, i64);

impl Row {
    /// The row of [`COLUMNS`], from the column at `first` on.
    fn read(row: &SqlRow<'_>, first: usize) -> rusqlite::Result<Columns> {
        Ok((
            row.get(first)?,
            row.get(first + 1)?,
            row.get(first + 2)?,
            row.get(first + 3)?,
            row.get(first + 4)?,
        ))
    }

    fn decode((text, token, expires_at, signal, bytes): Columns) -> Result<Self> {
        let token = token
            .map(|token| {
                <[u8; 16]>::try_from(token.as_slice())
                    .map(u128::from_be_bytes)
                    .map_err(|_| Failure::Invalid("a task's lease token is not 16 bytes".into()))
            })
            .transpose()?;
        Ok(Self {
            record: task_record::decode(&text)?,
            token,
            expires_at,
            signal,
            bytes,
        })
    }
}

/// A record as saved, and what its row then counts for.
pub(super) struct Saved {
    pub(super) text: String,
    pub(super) bytes: i64,
}

impl Saved {
    pub(super) fn of(record: &TaskRecord) -> Result<Self> {
        let text = task_record::encode(record)?;
        let bytes = count(ROW_BYTES + text.len());
        Ok(Self { text, bytes })
    }
}

impl Tx<'_> {
    fn load(&self, key: &TaskKey) -> Result<Option<Row>> {
        let read = self
            .transaction
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM carmy_tasks WHERE principal = ?1 AND id = ?2"
            ))?
            .query_row((key.principal(), key.id().as_str()), |row| {
                Row::read(row, 0)
            })
            .optional()?;
        read.map(Row::decode).transpose()
    }

    /// The task `key` names as it stands now: a lease that ran out settled as lost, a task past
    /// its ttl forgotten.
    pub(super) fn live(&mut self, key: &TaskKey) -> Result<Option<Row>> {
        let Some(mut row) = self.load(key)? else {
            return Ok(None);
        };
        if row.token.is_some() && row.expires_at <= self.now {
            self.settle_lost(key, &mut row)?;
        }
        if row.expires_at <= self.now {
            self.transaction
                .prepare_cached("DELETE FROM carmy_tasks WHERE principal = ?1 AND id = ?2")?
                .execute((key.principal(), key.id().as_str()))?;
            return Ok(None);
        }
        Ok(Some(row))
    }

    /// The task `lease` holds; `LeaseLost` if it holds nothing (any more).
    pub(super) fn held(&mut self, lease: &TaskLease) -> Result<Row> {
        match self.live(lease.key())? {
            Some(row) if row.token == Some(lease.token()) => Ok(row),
            _ => {
                self.wakes.push(Wake::Lost(lease.clone()));
                Err(StoreError::LeaseLost.into())
            }
        }
    }

    /// Ends the task of a lease that ran out: `failed`, kept for its ttl from the lease's
    /// expiry (as if it ended then). Its holder, wherever it is, is told.
    fn settle_lost(&mut self, key: &TaskKey, row: &mut Row) -> Result<()> {
        let ending = TaskEnding::lost(row.record.execution_id.clone());
        row.record.end(ending, instant(self.now));
        row.token = None;
        row.expires_at = row.expires_at.saturating_add(ms(row.record.ttl));
        let saved = Saved::of(&row.record)?;
        self.save(key, row, &saved, true)?;
        self.wakes.push(Wake::Release(key.clone()));
        Ok(())
    }

    /// Writes `row` back with its record `saved`; with `signal`, under a new stamp, for its
    /// holder to act on.
    pub(super) fn save(
        &mut self,
        key: &TaskKey,
        row: &mut Row,
        saved: &Saved,
        signal: bool,
    ) -> Result<()> {
        let stamp = if signal {
            let stamp: i64 = self
                .transaction
                .prepare_cached(
                    "UPDATE carmy_task_stamp SET stamp = stamp + 1 WHERE id = 0 RETURNING stamp",
                )?
                .query_row([], |row| row.get(0))?;
            Some(stamp)
        } else {
            None
        };
        let token = row.token.map(u128::to_be_bytes);
        self.transaction
            .prepare_cached(
                "UPDATE carmy_tasks SET record = ?3, token = ?4, expires_at = ?5, bytes = ?6, \
                 signal = coalesce(?7, signal) WHERE principal = ?1 AND id = ?2",
            )?
            .execute((
                key.principal(),
                key.id().as_str(),
                &saved.text,
                token.as_ref().map(|token| &token[..]),
                row.expires_at,
                saved.bytes,
                stamp,
            ))?;
        row.bytes = saved.bytes;
        if let Some(stamp) = stamp {
            row.signal = stamp;
            self.wakes.push(Wake::Signal(key.clone(), stamp));
        }
        Ok(())
    }

    /// `principal`'s tasks and their bytes.
    fn share(&self, principal: &str) -> Result<(i64, i64)> {
        Ok(self
            .transaction
            .prepare_cached("SELECT tasks, bytes FROM carmy_task_shares WHERE principal = ?1")?
            .query_row([principal], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?
            .unwrap_or((0, 0)))
    }

    /// Every principal's tasks and their bytes.
    fn totals(&self) -> Result<(i64, i64)> {
        Ok(self
            .transaction
            .prepare_cached("SELECT tasks, bytes FROM carmy_task_totals WHERE id = 0")?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?)
    }

    /// Whether `extra` more bytes fit in `principal`'s share and in the total (fewer always do).
    pub(super) fn fits(&self, principal: &str, extra: i64) -> Result<bool> {
        if extra <= 0 {
            return Ok(true);
        }
        let (_, share) = self.share(principal)?;
        let (_, total) = self.totals()?;
        Ok(
            share.saturating_add(extra) <= count(self.options.tasks.max_bytes_per_principal)
                && total.saturating_add(extra) <= count(self.options.tasks.max_bytes),
        )
    }

    /// Whether a task of `bytes` may be created for `principal`: its share and the totals have
    /// room once what is due is settled and forgotten. Nobody's live task is forgotten to make
    /// room.
    pub(super) fn make_room(&mut self, principal: &str, bytes: i64) -> Result<()> {
        let options = self.options;
        let full_share = |(tasks, weight): (i64, i64)| {
            tasks >= count(options.tasks.max_per_principal)
                || weight.saturating_add(bytes) > count(options.tasks.max_bytes_per_principal)
        };
        if full_share(self.share(principal)?) {
            // Only now is the principal's backlog worth a look: most creates never pay for it.
            self.settle_due(Some(principal))?;
            if full_share(self.share(principal)?) {
                return Err(StoreError::Full(
                    "too many tasks are kept for this caller; retry once older ones expire".into(),
                )
                .into());
            }
        }
        let full_totals = |(tasks, weight): (i64, i64)| {
            tasks >= count(options.tasks.max)
                || weight.saturating_add(bytes) > count(options.tasks.max_bytes)
        };
        if full_totals(self.totals()?) {
            self.settle_due(None)?;
            if full_totals(self.totals()?) {
                return Err(StoreError::Full(
                    "too many tasks are kept; retry once older ones expire".into(),
                )
                .into());
            }
        }
        Ok(())
    }

    /// Settles the leases that ran out and forgets the tasks past their ttl, of `principal` or
    /// of everyone; how many were forgotten.
    pub(super) fn settle_due(&mut self, principal: Option<&str>) -> Result<usize> {
        let filter = if principal.is_some() {
            " AND principal = ?2"
        } else {
            ""
        };
        // Settling changes the record, so it is done here, one row at a time; forgetting is
        // one statement.
        let due = {
            let mut statement = self.transaction.prepare_cached(&format!(
                "SELECT principal, id, {COLUMNS} FROM carmy_tasks \
                 WHERE token IS NOT NULL AND expires_at <= ?1{filter}"
            ))?;
            let read = |row: &SqlRow<'_>| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    Row::read(row, 2)?,
                ))
            };
            match principal {
                Some(principal) => statement
                    .query_map((self.now, principal), read)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
                None => statement
                    .query_map([self.now], read)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            }
        };
        for (owner, id, read) in due {
            let key = TaskKey::new(Some(&owner), id.as_str());
            let mut row = Row::decode(read)?;
            self.settle_lost(&key, &mut row)?;
        }
        let mut forget = self.transaction.prepare_cached(&format!(
            "DELETE FROM carmy_tasks WHERE token IS NULL AND expires_at <= ?1{filter}"
        ))?;
        let forgotten = match principal {
            Some(principal) => forget.execute((self.now, principal))?,
            None => forget.execute([self.now])?,
        };
        Ok(forgotten)
    }
}

/// The instant `ms` milliseconds after the epoch, as records keep it.
pub(super) fn instant(ms: i64) -> std::time::SystemTime {
    task_record::at(u64::try_from(ms).unwrap_or(0))
}
