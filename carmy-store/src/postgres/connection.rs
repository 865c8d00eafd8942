//! Connections: how they are configured, pooled, bounded in time, and thrown away once broken.
//!
//! Every call takes a connection from the pool within `connect_timeout` and runs within
//! `statement_timeout` (plus a grace, so the server's own, more precise timeout is the one
//! that usually fires), so it fails closed in bounded time whatever the server does: refuses
//! connections, restarts, holds a lock, or stops answering. The pool hands out a connection
//! after checking only that it is not closed (deadpool's `Fast` recycling): a server that went
//! away closes its sockets, so its connections are dropped there and new ones made; one whose
//! death went unnoticed fails its first statement, fails that call closed, and is thrown away
//! ([`Failure::breaks_connection`]), so a `PostgresStore` serves again by itself once the
//! server is back. A test query on every checkout would cost a round trip per call for
//! nothing more.
//!
//! Connections are made and driven on the runtime the store was connected on ([`OnRuntime`]),
//! whichever runtime's call needs one: a store is shared (in an `Arc`) by runtimes that may end
//! before it, as a replica's does when it stops, and a connection whose socket and task lived
//! on an ended runtime would hang the next call that took it from the pool.

use std::{future::Future, time::Duration};

use deadpool_postgres::{Connect, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio::{runtime::Handle, task::JoinHandle};
use tokio_postgres::{Client, Config, NoTls, config::Host};

use super::{PostgresStoreOptions, error::Failure, sql::Sql};

/// How much longer than `statement_timeout` a call may take before the store gives up on the
/// server answering.
const GRACE: Duration = Duration::from_secs(1);

/// The pool, and what every call on it needs.
pub(super) struct Database {
    pool: Pool,
    config: Config,
    pub(super) options: PostgresStoreOptions,
    pub(super) sql: Sql,
}

impl Database {
    /// A pool of connections to `url`; nothing is connected yet.
    pub(super) fn new(url: &str, options: PostgresStoreOptions) -> Result<Self, Failure> {
        // The parser's errors name the option at fault, never its value: no password in them.
        let mut config: Config = url.parse().map_err(|error| {
            Failure::Invalid(format!("not a PostgreSQL connection string: {error}"))
        })?;
        config.connect_timeout(options.connect_timeout);
        // A server gone silent (a cable pulled, a VM paused) is noticed by the connections
        // nobody writes on, the listener's above all, within about a minute.
        config.keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("carmy-store");
        }
        // The server's own bounds on each session: a statement (a lock wait included) ends at
        // `statement_timeout`, and a session whose client vanished mid-transaction is ended
        // rather than left holding its row locks.
        let ours = format!(
            "-c statement_timeout={} -c idle_in_transaction_session_timeout={}",
            millis(options.statement_timeout),
            millis(options.statement_timeout + GRACE) * 2,
        );
        let startup = match config.get_options() {
            Some(theirs) if !theirs.trim().is_empty() => format!("{theirs} {ours}"),
            _ => ours,
        };
        config.options(startup);

        let manager = Manager::from_connect(
            config.clone(),
            OnRuntime(Handle::current()),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|error| {
                Failure::Invalid(format!("cannot build the connection pool: {error}"))
            })?;
        let sql = Sql::new(&options.schema);
        Ok(Self {
            pool,
            config,
            options,
            sql,
        })
    }

    /// The connection settings, for a connection of its own outside the pool (the listener's).
    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    /// Where the store connects, for people: user, hosts, ports and database, never the
    /// password.
    pub(super) fn target(&self) -> String {
        describe(&self.config)
    }

    /// Connections open now, and how many of them are idle.
    pub(super) fn pool_status(&self) -> (usize, usize) {
        let status = self.pool.status();
        (status.size, status.available)
    }

    /// A connection within `connect_timeout`.
    pub(super) async fn connection(&self) -> Result<Object, Failure> {
        let limit = self.options.connect_timeout;
        // deadpool bounds its wait, its connect and its check one by one; this bounds the sum.
        match tokio::time::timeout(limit, self.pool.get()).await {
            Ok(connection) => Ok(connection?),
            Err(_) => Err(Failure::TimedOut {
                what: "getting a connection",
                limit,
            }),
        }
    }

    /// Runs `work` (on `connection`) within the call's time bound.
    pub(super) async fn bounded<T>(
        &self,
        what: &'static str,
        work: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        let limit = self.options.statement_timeout + GRACE;
        tokio::time::timeout(limit, work)
            .await
            .unwrap_or(Err(Failure::TimedOut { what, limit }))
    }

    /// Gives `connection` back to the pool, unless `answer` says it is broken: then it is
    /// closed, and the pool makes a new one when it needs one.
    pub(super) fn give_back<T>(connection: Object, answer: &Result<T, Failure>) {
        if answer.as_ref().is_err_and(Failure::breaks_connection) {
            drop(Object::take(connection));
        }
    }
}

/// Makes the pool's connections on the runtime of `Handle`: the socket is registered with its
/// reactor and the connection's task runs there, so a connection outlives the runtime of the
/// call that made it.
struct OnRuntime(Handle);

type Connected = Result<(Client, JoinHandle<()>), tokio_postgres::Error>;

impl Connect for OnRuntime {
    fn connect(
        &self,
        config: &Config,
    ) -> std::pin::Pin<Box<dyn Future<Output = Connected> + Send + '_>> {
        let config = config.clone();
        let made = self.0.spawn(connect(config.clone()));
        Box::pin(async move {
            // Not cancelled with the caller: a connection half made is finished, then dropped,
            // on the store's runtime.
            match made.await {
                Ok(connected) => connected,
                // The store's runtime has ended: the caller's is the only one left.
                Err(_) => connect(config).await,
            }
        })
    }
}

/// A connection to `config`, driven by a task on the current runtime.
async fn connect(config: Config) -> Connected {
    let (client, connection) = config.connect(NoTls).await?;
    let driven = tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "a connection of the store ended");
        }
    });
    Ok((client, driven))
}

/// `duration` in whole milliseconds, rounded up (PostgreSQL reads 0 as "no timeout"), and
/// capped far from overflowing a timestamp once added to now (about a thousand years).
pub(super) fn millis(duration: Duration) -> i64 {
    const LONGEST: i64 = 1000 * 366 * 24 * 60 * 60 * 1000;
    let whole =
        duration.as_millis() + u128::from(!duration.subsec_nanos().is_multiple_of(1_000_000));
    i64::try_from(whole).map_or(LONGEST, |ms| ms.min(LONGEST))
}

fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "postgres://{}@{}:{}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        if ports.is_empty() {
            "5432".to_owned()
        } else {
            ports.join(",")
        },
        config.get_dbname().unwrap_or(""),
    )
}
