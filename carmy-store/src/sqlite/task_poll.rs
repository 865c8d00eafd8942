//! How far the poll for other processes' task writes got on one connection.

use rusqlite::Connection;

use super::failure::Result;

/// How far the poll for other processes' task writes got.
#[derive(Debug)]
pub(super) struct TaskPoll {
    /// The connection's `data_version` at the last look.
    pub(super) data_version: i64,
    /// The latest stamp seen: every write after it has a later one.
    pub(super) stamp: i64,
}

impl TaskPoll {
    /// Where a connection just opened starts: everything written before is of no holder here.
    pub(super) fn start(connection: &Connection) -> Result<Self> {
        Ok(Self {
            data_version: data_version(connection)?,
            stamp: connection.query_row(
                "SELECT stamp FROM carmy_task_stamp WHERE id = 0",
                [],
                |row| row.get(0),
            )?,
        })
    }
}

pub(super) fn data_version(connection: &Connection) -> Result<i64> {
    Ok(connection.query_row("PRAGMA data_version", [], |row| row.get(0))?)
}
