//! Why a call on the database failed. Every kind but the store's own answers (`Full`,
//! `LeaseLost`) fails the call closed as [`StoreError::Unavailable`].

use std::time::Duration;

use carmy_core::StoreError;

#[derive(Debug, thiserror::Error)]
pub(super) enum Failure {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("postgres: {}", sql_error(.0))]
    Sql(#[from] tokio_postgres::Error),
    #[error("no connection to postgres: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("a kept value cannot be read or written: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    TaskForm(#[from] crate::task_record::TaskFormError),
    #[error("{what} took longer than {limit:?}")]
    TimedOut { what: &'static str, limit: Duration },
    #[error("{0}")]
    Invalid(String),
}

impl Failure {
    /// Whether the connection the call ran on must not serve another: it timed out (the server
    /// may have stopped answering mid-transaction, or answers still in flight would be read by
    /// the next call), or the connection itself failed. An error the server reported (a
    /// statement timeout, a constraint) leaves it usable: its transaction is rolled back.
    pub(super) fn breaks_connection(&self) -> bool {
        match self {
            Self::TimedOut { .. } => true,
            Self::Sql(error) => error.as_db_error().is_none() || error.is_closed(),
            _ => false,
        }
    }
}

/// What the server said, for the log: tokio-postgres's own text for a server's error is only
/// "db error".
fn sql_error(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

impl From<Failure> for StoreError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Store(error) => error,
            other => StoreError::unavailable(other),
        }
    }
}
