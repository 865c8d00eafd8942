//! Precedence: flags over the environment over the file over the defaults, each layer's keys.

use super::support::{file, loaded};
use crate::cli::config::*;

#[test]
fn without_anything_every_key_has_its_default() {
    let loaded = loaded(&["serve"], &[]);
    assert_eq!(loaded.settings, Settings::default());
    assert_eq!(loaded.settings.server.transport, Transport::Stdio);
    assert_eq!(loaded.settings.server.port, 8080);
    assert_eq!(
        loaded.settings.server.timeout_ms,
        carmy_mcp::DEFAULT_REQUEST_TIMEOUT.as_millis() as u64
    );
    for key in keys::KEYS {
        assert_eq!(loaded.origin(key.path), "default", "{}", key.path);
    }
}

#[test]
fn flags_beat_the_environment_which_beats_the_file_which_beats_the_defaults() {
    let path = file("shop.toml", "[server]\nport = 1000\nhost = \"0.0.0.0\"\n");
    let env = [("CARMY_SERVER__PORT", "2000")];

    let all = loaded(&["serve", "--config", &path, "-p", "3000"], &env);
    assert_eq!(all.settings.server.port, 3000);
    assert_eq!(all.origin("server.port"), "--port");
    // A key only the file sets keeps the file's value.
    assert_eq!(all.settings.server.host, "0.0.0.0");
    assert_eq!(all.origin("server.host"), path.as_str());

    let no_flag = loaded(&["serve", "--config", &path], &env);
    assert_eq!(no_flag.settings.server.port, 2000);
    assert_eq!(no_flag.origin("server.port"), "CARMY_SERVER__PORT");

    let file_only = loaded(&["serve", "--config", &path], &[]);
    assert_eq!(file_only.settings.server.port, 1000);
    assert_eq!(file_only.origin("server.port"), path.as_str());

    // The file can be named by the environment too; the flag names another.
    let other = file("other.toml", "[server]\nport = 4000\n");
    let by_env = loaded(&["serve"], &[(CONFIG_ENV, path.as_str())]);
    assert_eq!(by_env.settings.server.port, 1000);
    let flag_wins = loaded(
        &["serve", "--config", &other],
        &[(CONFIG_ENV, path.as_str())],
    );
    assert_eq!(flag_wins.settings.server.port, 4000);
}

// The `http` subcommand exists with the `http` feature only.
#[cfg(feature = "http")]
#[test]
fn a_shortcut_names_its_transport_over_the_file() {
    let path = file(
        "unix.yaml",
        "server:\n  transport: unix\n  socket: /tmp/shop.sock\n",
    );
    assert_eq!(
        loaded(&["serve", "--config", &path], &[])
            .settings
            .server
            .transport,
        Transport::Unix
    );
    let http = loaded(&["http", "--config", &path], &[]);
    assert_eq!(http.settings.server.transport, Transport::Http);
    assert_eq!(http.origin("server.transport"), "the subcommand");
    assert_eq!(
        loaded(&["http", "--legacy-sse"], &[])
            .settings
            .server
            .transport,
        Transport::Sse
    );
    assert_eq!(
        loaded(&["mcp", "--config", &path], &[])
            .settings
            .server
            .transport,
        Transport::Stdio
    );
    assert_eq!(
        loaded(&["serve", "-t", "sse", "--config", &path], &[])
            .settings
            .server
            .transport,
        Transport::Sse
    );
}

// The `http` subcommand exists with the `http` feature only.
#[cfg(feature = "http")]
#[test]
fn flags_in_seconds_and_addresses_set_their_keys() {
    let loaded = loaded(
        &[
            "http",
            "--addr",
            "[::1]:0",
            "--request-timeout",
            "5",
            "--grace",
            "2",
            "--max-sessions",
            "7",
            "--stateless",
        ],
        &[],
    );
    let server = &loaded.settings.server;
    assert_eq!((server.host.as_str(), server.port), ("[::1]", 0));
    assert_eq!(server.timeout_ms, 5000);
    assert_eq!(server.grace_period_ms, 2000);
    assert_eq!(server.max_sessions, 7);
    assert!(server.stateless);
    assert_eq!(loaded.origin("server.timeout_ms"), "--request-timeout");
    assert_eq!(loaded.origin("server.host"), "--addr");
}

#[test]
fn lists_replace_each_other_by_layer() {
    let path = file("grants.json", r#"{"security": {"grants": ["confirm:a"]}}"#);
    let env = [("CARMY_SECURITY__GRANTS", "confirm:b, confirm:c")];
    assert_eq!(
        loaded(&["serve", "--config", &path], &[])
            .settings
            .security
            .grants,
        ["confirm:a"]
    );
    assert_eq!(
        loaded(&["serve", "--config", &path], &env)
            .settings
            .security
            .grants,
        ["confirm:b", "confirm:c"]
    );
    assert_eq!(
        loaded(
            &["serve", "--config", &path, "--grant", "x", "--grant", "y"],
            &env
        )
        .settings
        .security
        .grants,
        ["x", "y"]
    );
}
