//! `--state-keys-file PATH` (`security.state_keys_file`): the keys that seal the `requestState`
//! of 2026-07-28 round trips, which replicas must share (see [`carmy_mcp::StateKeys`]).
//!
//! Without the key, a network server with a store replicas share (PostgreSQL, Redis) does not
//! start: behind a balancer a client's answer reaches any replica, and one holding a key of its
//! own would refuse it at the first retry. A stdio server is one process for its one client,
//! and a server on memory or SQLite serves alone, so they keep a random key of their own.

use std::process::ExitCode;

use carmy_mcp::StateKeys;

use super::config::Settings;
#[cfg(feature = "store")]
use super::config::Transport;

/// The keys `settings` name, read from their file; `None`: the server keeps its own random key.
/// A file that cannot be used, or no file where replicas need one, is a usage error (exit 2).
pub(super) fn load(settings: &Settings) -> Result<Option<StateKeys>, ExitCode> {
    let Some(path) = settings.security.state_keys_file.as_deref() else {
        if let Some(store) = shared_store(settings) {
            eprintln!(
                "error: the store {store} is shared by replicas, so each replica must open the \
                 request states the others seal: give them all the same keys with \
                 --state-keys-file PATH (security.state_keys_file), a file of `ID KEY` lines \
                 (KEY from `openssl rand -base64 32`), readable by this user alone"
            );
            return Err(ExitCode::from(2));
        }
        return Ok(None);
    };
    let shown = path.display();
    let keys = super::private_file::read(path, "state key file").and_then(|text| {
        StateKeys::parse(&text).map_err(|error| format!("the state key file {shown}: {error}"))
    });
    match keys {
        Ok(keys) => {
            tracing::info!(sealing = keys.sealing_id(), "request state keys");
            Ok(Some(keys))
        }
        Err(message) => {
            eprintln!("error: {message}");
            Err(ExitCode::from(2))
        }
    }
}

/// The store replicas share that `settings` serve on the network with, as shown to the user.
#[cfg(feature = "store")]
fn shared_store(settings: &Settings) -> Option<String> {
    if settings.server.transport == Transport::Stdio {
        return None;
    }
    let store = settings.store.as_deref()?;
    super::store::is_shared(store).then(|| super::redact::redacted(store))
}

#[cfg(not(feature = "store"))]
fn shared_store(_: &Settings) -> Option<String> {
    // The runtime keeps the store it was built with, which this command line cannot see.
    None
}
