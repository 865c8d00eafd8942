//! Why a job on the SQLite thread failed, and how the store reports it.

use carmy_core::StoreError;

use crate::task_record::TaskFormError;

/// Why a job failed; every kind fails the call closed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Failure {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("sqlite: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("a kept value cannot be read or written: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Task(#[from] TaskFormError),
    #[error("{0}")]
    Invalid(String),
    #[error("creating the file: {0}")]
    File(std::io::Error),
}

impl From<Failure> for StoreError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Store(error) => error,
            other => StoreError::unavailable(other),
        }
    }
}

pub(super) type Result<T, E = Failure> = std::result::Result<T, E>;
