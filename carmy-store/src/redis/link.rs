//! The store's connection to Redis: one multiplexed connection carries every call (Redis
//! runs commands one at a time anyway, so more connections would only queue there), and is
//! replaced when it fails.
//!
//! Every call is bounded: connecting (waiting for another call's attempt included) by the
//! connect timeout, the answer by the response timeout. A call that fails in any way (refused,
//! timed out, reset, `-LOADING` while Redis reads its files back, `-READONLY` from a server
//! that became a replica) fails closed, and drops the connection it used: the next call
//! connects afresh, so the store serves again by itself once Redis is back (through DNS
//! again, should the name now point at another server). No call waits for Redis to return.
//!
//! One failure is sent again at once: a call that finds the connection it was handed already
//! dead (reset or closed while idle: Redis restarted, or its `timeout` or a proxy closed an
//! idle connection) goes once more over a fresh one. That is safe because each script
//! recognises the lease token it is sent with: a claim, a settle or a commit that finishes a
//! lease that ran before its answer was lost is not applied twice. A commit without a lease
//! has no token to be recognised by, so it is never sent again ([`Link::run_once`]): its
//! failure is the caller's, as a timeout is.

use std::{
    future::Future,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use redis::{AsyncConnectionConfig, Client, RedisError, RedisResult, aio::MultiplexedConnection};
use tokio::time::timeout;

use crate::sync::lock;

/// Why a call to Redis failed: every kind fails the call closed.
#[derive(Debug, thiserror::Error)]
pub(super) enum LinkError {
    #[error("cannot connect to Redis: {0}")]
    Connect(#[source] RedisError),
    #[error("Redis did not take a connection within {0:?}")]
    ConnectTimeout(Duration),
    #[error("Redis failed the {what}: {error}")]
    Call {
        what: &'static str,
        #[source]
        error: RedisError,
    },
    #[error("Redis did not answer the {what} within {after:?}")]
    Timeout { what: &'static str, after: Duration },
}

impl LinkError {
    /// Whether the call met a connection that was dead before it was sent on it.
    fn found_it_dead(&self) -> bool {
        matches!(self, Self::Call { error, .. } if error.is_io_error() && !error.is_timeout())
    }
}

pub(super) struct Link {
    client: Client,
    config: AsyncConnectionConfig,
    connect_timeout: Duration,
    response_timeout: Duration,
    /// The connection calls use; `None` before the first and after a failure.
    current: Mutex<Option<Current>>,
    /// Held while connecting, so that calls arriving meanwhile wait for that attempt instead
    /// of opening connections of their own.
    connecting: tokio::sync::Mutex<()>,
    next: AtomicU64,
}

#[derive(Clone)]
struct Current {
    /// Tells this connection from its successors, so a late failure drops only its own.
    number: u64,
    connection: MultiplexedConnection,
}

impl Link {
    pub(super) fn new(
        client: Client,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Self {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(response_timeout));
        Self {
            client,
            config,
            connect_timeout,
            response_timeout,
            current: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            next: AtomicU64::new(0),
        }
    }

    /// Runs `call` on the connection (connecting first if need be) within the timeouts.
    /// `call` may be run twice, on two connections (see the module's docs): the second time
    /// it is told so (`again`), so that a settle can accept that it was applied already.
    pub(super) async fn run<T, F, Fut>(&self, what: &'static str, call: F) -> Result<T, LinkError>
    where
        F: Fn(MultiplexedConnection, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.attempt(what, call, true).await
    }

    /// [`run`](Self::run), but `call` is sent once at most, whatever becomes of it: for a call
    /// that could not tell, sent again, that it had been applied already.
    pub(super) async fn run_once<T, F, Fut>(
        &self,
        what: &'static str,
        call: F,
    ) -> Result<T, LinkError>
    where
        F: Fn(MultiplexedConnection, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.attempt(what, call, false).await
    }

    async fn attempt<T, F, Fut>(
        &self,
        what: &'static str,
        call: F,
        resend: bool,
    ) -> Result<T, LinkError>
    where
        F: Fn(MultiplexedConnection, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let (current, reused) = self.connection().await?;
        match self
            .answer(what, &current, call(current.connection.clone(), false))
            .await
        {
            Err(error) if resend && reused && error.found_it_dead() => {
                let (current, _) = self.connection().await?;
                self.answer(what, &current, call(current.connection.clone(), true))
                    .await
            }
            answer => answer,
        }
    }

    async fn answer<T>(
        &self,
        what: &'static str,
        current: &Current,
        call: impl Future<Output = RedisResult<T>>,
    ) -> Result<T, LinkError> {
        let failure = match timeout(self.response_timeout, call).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(error)) => LinkError::Call { what, error },
            Err(_) => LinkError::Timeout {
                what,
                after: self.response_timeout,
            },
        };
        self.drop_connection(current.number);
        Err(failure)
    }

    /// The connection in use, or a new one; and whether it was in use already.
    async fn connection(&self) -> Result<(Current, bool), LinkError> {
        if let Some(current) = self.current() {
            return Ok((current, true));
        }
        let attempt = async {
            let _turn = self.connecting.lock().await;
            if let Some(current) = self.current() {
                // Another call connected while this one waited for its turn.
                return Ok((current, false));
            }
            let connection = self
                .client
                .get_multiplexed_async_connection_with_config(&self.config)
                .await
                .map_err(LinkError::Connect)?;
            let current = Current {
                number: self.next.fetch_add(1, Ordering::Relaxed),
                connection,
            };
            *lock(&self.current) = Some(current.clone());
            Ok((current, false))
        };
        timeout(self.connect_timeout, attempt)
            .await
            .unwrap_or(Err(LinkError::ConnectTimeout(self.connect_timeout)))
    }

    fn current(&self) -> Option<Current> {
        lock(&self.current).clone()
    }

    fn drop_connection(&self, number: u64) {
        let mut slot = lock(&self.current);
        if slot
            .as_ref()
            .is_some_and(|current| current.number == number)
        {
            *slot = None;
        }
    }
}
