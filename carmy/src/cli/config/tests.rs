//! Each precedence rule and each error, on the real command line's flags.

use std::sync::atomic::{AtomicUsize, Ordering};

use clap::ArgMatches;

use super::*;
use crate::cli::Cli;

/// The subcommand's matches, parsed as a binary named `shop` would parse them.
fn parse(args: &[&str]) -> (String, ArgMatches) {
    let cli = Cli::build(carmy_core::Carmy::new()).name("shop");
    let all = cli
        .command()
        .try_get_matches_from(std::iter::once("shop").chain(args.iter().copied()))
        .expect("the command line parses");
    let (name, sub) = all.subcommand().expect("a subcommand");
    (name.to_owned(), sub.clone())
}

fn load_with(args: &[&str], env: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    let (name, sub) = parse(args);
    let implied = match name.as_str() {
        "mcp" => Some(Transport::Stdio),
        "http" => Some(Transport::Http),
        "unix" => Some(Transport::Unix),
        _ => None,
    };
    let vars = env
        .iter()
        .map(|(name, value)| ((*name).into(), (*value).into()));
    load(&sub, implied, vars)
}

fn loaded(args: &[&str], env: &[(&str, &str)]) -> Loaded {
    load_with(args, env).expect("the configuration loads")
}

fn error(args: &[&str], env: &[(&str, &str)]) -> String {
    load_with(args, env)
        .expect_err("the configuration is refused")
        .0
}

/// A file named `name` holding `text`, in a directory of its own.
fn file(name: &str, text: &str) -> String {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "carmy-config-{}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the file");
    path.to_string_lossy().into_owned()
}

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
    for key in settings::KEYS {
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
    assert_eq!(all.origin("server.host"), path);

    let no_flag = loaded(&["serve", "--config", &path], &env);
    assert_eq!(no_flag.settings.server.port, 2000);
    assert_eq!(no_flag.origin("server.port"), "CARMY_SERVER__PORT");

    let file_only = loaded(&["serve", "--config", &path], &[]);
    assert_eq!(file_only.settings.server.port, 1000);
    assert_eq!(file_only.origin("server.port"), path);

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

// The `http` subcommand exists with the `http` feature only.
#[cfg(feature = "http")]
#[test]
fn older_variables_count_when_the_new_ones_are_unset() {
    let old = loaded(
        &["http"],
        &[("CARMY_HTTP_TOKEN_FILE", "/old"), ("RUST_LOG", "debug")],
    );
    assert_eq!(
        old.settings.security.token_file,
        Some(std::path::PathBuf::from("/old"))
    );
    assert_eq!(old.settings.logging.level, "debug");
    assert_eq!(old.origin("logging.level"), "RUST_LOG");

    let env = [
        ("CARMY_HTTP_TOKEN_FILE", "/old"),
        ("CARMY_SECURITY__TOKEN_FILE", "/new"),
        ("RUST_LOG", "debug"),
        ("CARMY_LOGGING__LEVEL", "info"),
    ];
    let new = loaded(&["http"], &env);
    assert_eq!(
        new.settings.security.token_file,
        Some(std::path::PathBuf::from("/new"))
    );
    assert_eq!(new.settings.logging.level, "info");
    assert_eq!(
        loaded(&["http", "-l", "trace"], &env)
            .settings
            .logging
            .level,
        "trace"
    );
}

#[test]
fn variables_that_name_no_section_are_not_configuration() {
    let loaded = loaded(
        &["serve"],
        &[
            ("CARMY_TEST_SERVERS", "required"),
            ("CARMY_STORE", "memory"),
            ("HOME", "/root"),
        ],
    );
    assert_eq!(loaded.settings.store.as_deref(), Some("memory"));
    assert_eq!(loaded.origin("store"), "CARMY_STORE");
}

#[test]
fn the_three_formats_say_the_same() {
    let toml = file(
        "shop.toml",
        "store = \"memory\"\n[server]\ntransport = \"http\"\nport = 9000\nstateless = true\n\
         [security]\nallowed_origins = [\"https://app.example\"]\n[logging]\nformat = \"compact\"\n",
    );
    let yaml = file(
        "shop.yml",
        "store: memory\nserver:\n  transport: http\n  port: 9000\n  stateless: true\n\
         security:\n  allowed_origins: [\"https://app.example\"]\nlogging:\n  format: compact\n",
    );
    let json = file(
        "shop.JSON",
        r#"{"store": "memory", "server": {"transport": "http", "port": 9000, "stateless": true},
            "security": {"allowed_origins": ["https://app.example"]},
            "logging": {"format": "compact"}}"#,
    );
    let read = |path: &str| loaded(&["serve", "--config", path], &[]).settings;
    let settings = read(&toml);
    assert_eq!(settings.server.transport, Transport::Http);
    assert_eq!(settings.server.port, 9000);
    assert!(settings.server.stateless);
    assert_eq!(settings.security.allowed_origins, ["https://app.example"]);
    assert_eq!(settings.logging.format, LogFormat::Compact);
    assert_eq!(read(&yaml), settings);
    assert_eq!(read(&json), settings);
}

#[test]
fn an_unknown_key_is_named_with_its_file_and_line() {
    let path = file("shop.toml", "[server]\nport = 80\nprot = 81\n");
    assert_eq!(
        error(&["serve", "--config", &path], &[]),
        format!(
            "{path}:3: server.prot = 81: unknown key; [server] has name, version, transport, \
             host, port, socket, grace_period_ms, stateless, max_connections, timeout_ms, \
             max_body_bytes, max_sessions, max_sessions_per_principal, session_idle_timeout_ms, \
             stream_timeout_ms, header_read_timeout_ms, write_timeout_ms, worker_threads"
        )
    );
    let section = file("shop.yaml", "servr:\n  port: 80\n");
    assert_eq!(
        error(&["serve", "--config", &section], &[]),
        format!(
            "{section}:1: servr = a table: unknown key; the sections are server, security, \
             resources, logging, tool_settings, store"
        )
    );
    assert_eq!(
        error(&["serve"], &[("CARMY_SERVER__PROT", "81")]),
        "CARMY_SERVER__PROT: server.prot = \"81\": unknown key; [server] has name, version, \
         transport, host, port, socket, grace_period_ms, stateless, max_connections, timeout_ms, \
         max_body_bytes, max_sessions, max_sessions_per_principal, session_idle_timeout_ms, \
         stream_timeout_ms, header_read_timeout_ms, write_timeout_ms, worker_threads"
    );
}

#[test]
fn a_bad_value_is_named_with_where_it_was_written() {
    let yaml = file("shop.yaml", "server:\n  host: 0.0.0.0\n  port: eighty\n");
    let message = error(&["serve", "--config", &yaml], &[]);
    assert!(
        message.starts_with(&format!("{yaml}:3: server.port = \"eighty\": expected")),
        "{message}"
    );

    let json = file(
        "shop.json",
        "{\n  \"server\": {\n    \"transport\": \"htp\"\n  }\n}\n",
    );
    let message = error(&["serve", "--config", &json], &[]);
    assert!(
        message
            == format!(
                "{json}:3: server.transport = \"htp\": expected one of stdio, http, sse, unix"
            ),
        "{message}"
    );

    let message = error(&["serve"], &[("CARMY_SERVER__MAX_SESSIONS", "many")]);
    assert!(
        message.starts_with("CARMY_SERVER__MAX_SESSIONS: server.max_sessions = \"many\": expected"),
        "{message}"
    );

    let big = file("big.toml", "[server]\nport = 70000\n");
    let message = error(&["serve", "--config", &big], &[]);
    assert!(
        message.starts_with(&format!("{big}:2: server.port = 70000:")),
        "{message}"
    );

    let level = file("level.toml", "[logging]\nlevel = \"loud=[\"\n");
    let message = error(&["serve", "--config", &level], &[]);
    assert!(
        message.starts_with(&format!(
            "{level}:2: logging.level = \"loud=[\": not a level or filter directives"
        )),
        "{message}"
    );
}

#[test]
fn a_file_that_cannot_be_read_says_why() {
    let ini = file("shop.ini", "[server]\n");
    assert!(
        error(&["serve", "--config", &ini], &[]).starts_with(&format!(
            "{ini}: a configuration file is TOML, YAML or JSON"
        )),
    );
    let missing = format!("{ini}.toml");
    assert!(
        error(&["serve", "--config", &missing], &[])
            .starts_with(&format!("{missing}: cannot read the configuration")),
    );
    let broken = file("broken.toml", "[server\nport = 1\n");
    let message = error(&["serve", "--config", &broken], &[]);
    assert!(message.starts_with(&format!("{broken}: ")), "{message}");
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn config_prints_each_value_with_its_origin_and_hides_passwords() {
    let path = file(
        "shop.toml",
        "store = \"postgres://shop:s3cret@db/shop\"\n[server]\nport = 1000\n",
    );
    let loaded = loaded(
        &["serve", "--config", &path, "-t", "http"],
        &[("CARMY_SECURITY__PRINCIPAL", "ops")],
    );
    let text = print(&loaded, false);
    assert!(!text.contains("s3cret"), "{text}");
    let line = |start: &str| {
        text.lines()
            .find(|line| line.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
            .to_owned()
    };
    assert!(line("store = ").ends_with(&format!("# {path}")));
    assert!(line("store = ").contains("postgres://shop:***@db/shop"));
    assert!(line("transport = \"http\"").ends_with("# --transport"));
    assert!(line("port = 1000").ends_with(&format!("# {path}")));
    assert!(line("principal = \"ops\"").ends_with("# CARMY_SECURITY__PRINCIPAL"));
    assert!(line("# socket = (unset)").ends_with("# default"));
    // `store` comes before the first section, so the text reads back as TOML.
    assert!(text.find("store = ").unwrap() < text.find("[server]").unwrap());

    let json: serde_json::Value = serde_json::from_str(&print(&loaded, true)).expect("JSON");
    let port = json
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["key"] == "server.port")
        .unwrap();
    assert_eq!(port["value"], 1000);
    assert_eq!(port["from"], path.as_str());
}

#[test]
fn every_setting_is_a_documented_key_and_readme_shows_them_all() {
    // Each leaf of the settings is in KEYS, and each key of KEYS is a leaf.
    fn leaves(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
        match value.as_object() {
            Some(fields) => {
                for (name, value) in fields {
                    let key = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    leaves(&key, value, out);
                }
            }
            None => out.push(prefix.to_owned()),
        }
    }
    let mut found = Vec::new();
    leaves(
        "",
        &serde_json::to_value(Settings::default()).unwrap(),
        &mut found,
    );
    found.sort();
    let mut documented: Vec<String> = settings::KEYS
        .iter()
        .map(|key| key.path.to_owned())
        .collect();
    documented.sort();
    assert_eq!(found, documented);

    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    assert!(
        readme.contains(&reference()),
        "README.md's configuration reference differs from `config --keys`:\n{}",
        reference()
    );
}

#[test]
fn rate_limits_are_read_from_nested_tables_and_a_zero_is_refused_where_written() {
    let path = file(
        "rates.toml",
        "[security.rate_limit]\nrequests_per_minute = 600\n\
         [tool_settings]\nrate_limit = { requests_per_minute = 30, burst_size = 5 }\n",
    );
    let settings = loaded(&["serve", "--config", &path], &[]).settings;
    assert_eq!(
        settings.security.rate_limit.limit(),
        carmy_core::RateLimit::per_minute(600)
    );
    assert_eq!(
        settings.tool_settings.rate_limit.limit(),
        carmy_core::RateLimit::per_minute(30).burst(5)
    );
    assert!(
        Settings::default()
            .tool_settings
            .rate_limit
            .limit()
            .is_unlimited()
    );

    let zero = file(
        "zero.yaml",
        "tool_settings:\n  max_execution_time_ms: 10\n  rate_limit:\n    requests_per_minute: 0\n",
    );
    assert_eq!(
        error(&["serve", "--config", &zero], &[]),
        format!(
            "{zero}:4: tool_settings.rate_limit.requests_per_minute = 0: at least 1; leave it \
             unset for no limit"
        )
    );
    assert_eq!(
        error(
            &["serve"],
            &[("CARMY_TOOL_SETTINGS__MAX_EXECUTION_TIME_MS", "0")]
        ),
        "CARMY_TOOL_SETTINGS__MAX_EXECUTION_TIME_MS: tool_settings.max_execution_time_ms = \"0\": \
         at least 1"
    );
}

#[test]
fn oauth_settings_are_checked_where_written() {
    let good = file(
        "oauth.toml",
        "[security.oauth]\nissuer = \"https://auth.example.com\"\n\
         resource = \"https://mcp.example.com/mcp\"\n\
         scopes = [\"shop:read allow:effect:read\", \"shop:orders allow:place_order\"]\n",
    );
    let settings = load_with(&["serve", "--config", &good], &[]);
    #[cfg(feature = "oauth")]
    {
        let settings = settings.expect("loads").settings;
        let oauth = settings
            .security
            .oauth
            .build(false)
            .expect("builds")
            .expect("on");
        assert_eq!(oauth.resource(), "https://mcp.example.com/mcp");
        assert_eq!(
            oauth.metadata()["scopes_supported"],
            serde_json::json!(["shop:read", "shop:orders"])
        );
        let plain = file(
            "plain.toml",
            "[security.oauth]\nissuer = \"http://auth.example.com\"\nresource = \"https://x/mcp\"\n",
        );
        assert_eq!(
            error(&["serve", "--config", &plain], &[]),
            format!(
                "{plain}:2: security.oauth.issuer = \"http://auth.example.com\": issuer \
                 `http://auth.example.com`: plain http is accepted for loopback hosts only"
            )
        );
        let rule = file(
            "rule.toml",
            "[security.oauth]\nissuer = \"https://a.example\"\nresource = \"https://x/mcp\"\n\
             scopes = [\"x allow:effect:any\"]\n",
        );
        assert!(
            error(&["serve", "--config", &rule], &[]).starts_with(&format!(
                "{rule}:4: security.oauth.scopes = [\"x allow:effect:any\"]: scope `x`: access \
                 rule `effect:any`"
            ))
        );
    }
    #[cfg(not(feature = "oauth"))]
    assert!(settings.is_err(), "refused without the feature");

    let lone = file(
        "lone.toml",
        "[security.oauth]\nresource = \"https://x/mcp\"\n",
    );
    assert_eq!(
        error(&["serve", "--config", &lone], &[]),
        format!(
            "{lone}:2: security.oauth.resource = \"https://x/mcp\": set without \
             `security.oauth.issuer`"
        )
    );
    assert_eq!(
        error(
            &["serve"],
            &[("CARMY_SECURITY__OAUTH__ISSUER", "https://auth.example.com")]
        ),
        "security.oauth.resource: required with `security.oauth.issuer`: this server's MCP \
         endpoint as clients reach it"
    );
    let both = file(
        "both.toml",
        "[security]\ntoken_file = \"/dev/null\"\n[security.oauth]\n\
         issuer = \"https://a.example\"\nresource = \"https://x/mcp\"\n",
    );
    assert_eq!(
        error(&["serve", "--config", &both], &[]),
        format!(
            "{both}:4: security.oauth.issuer = \"https://a.example\": `security.token_file` is \
             set too: callers authenticate with one or the other"
        )
    );
    let bare = file(
        "bare.toml",
        "[security.oauth]\nissuer = \"https://a.example\"\nresource = \"https://x/mcp\"\n\
         scopes = [\"solo\"]\n",
    );
    assert_eq!(
        error(&["serve", "--config", &bare], &[]),
        format!(
            "{bare}:4: security.oauth.scopes = [\"solo\"]: \"solo\": expected `SCOPE GRANT...` \
             (what the scope gives)"
        )
    );
}

#[test]
fn worker_threads_come_from_the_file_or_the_environment_and_default_to_automatic() {
    assert_eq!(loaded(&["mcp"], &[]).settings.server.worker_threads, 0);
    let path = file("threads.toml", "[server]\nworker_threads = 3\n");
    assert_eq!(
        loaded(&["serve", "--config", &path], &[])
            .settings
            .server
            .worker_threads,
        3
    );
    let env = [("CARMY_SERVER__WORKER_THREADS", "1")];
    assert_eq!(
        loaded(&["serve", "--config", &path], &env)
            .settings
            .server
            .worker_threads,
        1
    );
    assert!(
        error(&["mcp"], &[("CARMY_SERVER__WORKER_THREADS", "many")])
            .starts_with("CARMY_SERVER__WORKER_THREADS: server.worker_threads = \"many\"")
    );
}
