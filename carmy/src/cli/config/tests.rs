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
             resources, logging, tool_settings, store, request_ids"
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

    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/06-configuration.md"
    ))
    .expect("docs/06-configuration.md");
    assert!(
        readme.contains(&reference()),
        "docs/06-configuration.md's reference differs from `config --keys`:\n{}",
        reference()
    );
}

#[test]
fn request_id_bounds_are_read_from_the_file_and_the_environment_and_a_zero_is_refused() {
    let path = file(
        "bounds.toml",
        "[request_ids]\nmax_per_principal = 5000000\nmax_bytes = 1073741824\n",
    );
    let settings = loaded(
        &["serve", "--config", &path],
        &[("CARMY_REQUEST_IDS__MAX", "20000000")],
    )
    .settings;
    assert_eq!(
        settings.request_ids,
        settings::RequestIds {
            max_per_principal: Some(5_000_000),
            max_bytes_per_principal: None,
            max: Some(20_000_000),
            max_bytes: Some(1 << 30),
        }
    );
    // Unset, each store keeps its own bound.
    assert!(Settings::default().request_ids.set().is_empty());

    let zero = file(
        "zero.toml",
        "[request_ids]\nmax = 1\nmax_per_principal = 0\n",
    );
    assert_eq!(
        error(&["serve", "--config", &zero], &[]),
        format!("{zero}:3: request_ids.max_per_principal = 0: at least 1")
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

#[test]
fn a_key_written_twice_is_refused_where_it_is_repeated_in_every_format() {
    // serde_json keeps the last of two keys: the token file of the first section was dropped.
    let json = file(
        "twice.json",
        "{\n  \"security\": {\"token_file\": \"/etc/shop/tokens\"},\n  \
         \"security\": {\"grants\": [\"confirm:cancel_order\"]}\n}\n",
    );
    assert_eq!(
        error(&["serve", "--config", &json], &[]),
        format!("{json}:3: security: written twice; each key may appear once")
    );
    let nested = file(
        "nested.json",
        "{\"server\": {\"port\": 1,\n  \"port\": 2}}\n",
    );
    assert_eq!(
        error(&["serve", "--config", &nested], &[]),
        format!("{nested}:2: server.port: written twice; each key may appear once")
    );

    let yaml = file(
        "twice.yaml",
        "security:\n  token_file: /etc/shop/tokens\nsecurity:\n  grants: [confirm:a]\n",
    );
    assert_eq!(
        error(&["serve", "--config", &yaml], &[]),
        format!("{yaml}:3: security: written twice; each key may appear once")
    );
    // YAML's `1` and `"1"` differ, but both are the key `1` here.
    let spelled = file("spelled.yaml", "server:\n  port: 1\n  \"port\": 2\n");
    assert_eq!(
        error(&["serve", "--config", &spelled], &[]),
        format!("{spelled}:3: server.port: written twice; each key may appear once")
    );

    let toml = file(
        "twice.toml",
        "[security]\ntoken_file = \"/etc/shop/tokens\"\n[security]\ngrants = []\n",
    );
    let message = error(&["serve", "--config", &toml], &[]);
    assert!(message.starts_with(&format!("{toml}: ")), "{message}");
    assert!(message.contains("line 3"), "{message}");
    assert!(message.contains("duplicate key"), "{message}");

    // A dotted key and its table name one key: writing both is writing it twice.
    for (name, text) in [
        (
            "dotted.toml",
            "\"security.token_file\" = \"/a\"\n[security]\ntoken_file = \"/b\"\n",
        ),
        (
            "dotted.yaml",
            "security.token_file: /a\nsecurity:\n  token_file: /b\n",
        ),
        (
            "dotted.json",
            "{\"security\": {\"token_file\": \"/b\"}, \"security.token_file\": \"/a\"}",
        ),
    ] {
        let path = file(name, text);
        let message = error(&["serve", "--config", &path], &[]);
        assert!(
            message.starts_with(&path)
                && message
                    .ends_with("security.token_file: written twice; each key may appear once"),
            "{message}"
        );
    }
    // Dotted keys that do not meet are read as they always were.
    let apart = file("apart.yaml", "server.port: 1\nserver:\n  host: 0.0.0.0\n");
    let server = loaded(&["serve", "--config", &apart], &[]).settings.server;
    assert_eq!((server.host.as_str(), server.port), ("0.0.0.0", 1));
}

#[cfg(unix)]
#[test]
fn a_variable_that_is_not_utf8_is_refused_not_skipped() {
    use std::{ffi::OsString, os::unix::ffi::OsStringExt};
    let not_utf8 = || OsString::from_vec(b"/etc/shop/tok\xffens".to_vec());
    let (_, sub) = parse(&["serve"]);
    for name in [
        "CARMY_SECURITY__TOKEN_FILE",
        "CARMY_HTTP_TOKEN_FILE",
        "CARMY_STORE",
        "CARMY_CONFIG",
        "RUST_LOG",
    ] {
        let refused = load(&sub, None, [(OsString::from(name), not_utf8())])
            .expect_err("refused")
            .0;
        assert_eq!(
            refused,
            format!("{name}: not UTF-8, so it cannot be read; configuration values are text"),
        );
    }
    // A configuration variable's name that is not UTF-8 is refused too.
    let name = OsString::from_vec(b"CARMY_SECURITY__TOKEN_FIL\xff".to_vec());
    let refused = load(&sub, None, [(name, OsString::from("/x"))])
        .expect_err("refused")
        .0;
    assert!(
        refused.starts_with("CARMY_SECURITY__TOKEN_FIL\u{fffd}: not UTF-8"),
        "{refused}"
    );
    // Other programs' variables are none of the configuration's business.
    assert!(load(&sub, None, [(OsString::from("LANG"), not_utf8())]).is_ok());

    // Nor is a flag's value changed to read it: `--store` is the only one that may not be text.
    #[cfg(feature = "store")]
    {
        let all = Cli::build(carmy_core::Carmy::new())
            .name("shop")
            .command()
            .try_get_matches_from([
                OsString::from("shop"),
                "serve".into(),
                "--store".into(),
                not_utf8(),
            ])
            .expect("the command line parses");
        let (_, sub) = all.subcommand().expect("a subcommand");
        assert_eq!(
            load(sub, None, Vec::new()).expect_err("refused").0,
            "--store: not UTF-8, so it cannot be read; configuration values are text"
        );
    }
}

#[test]
fn a_file_past_its_size_bound_is_refused_without_reading_it_all() {
    let limit = [("CARMY_CONFIG_MAX_BYTES", "64")];
    let text = format!("[server]\nname = \"{}\"\n", "x".repeat(64 - 19));
    assert_eq!(text.len(), 64);
    let fits = file("fits.toml", &text);
    assert_eq!(
        loaded(&["serve", "--config", &fits], &limit)
            .settings
            .server
            .name
            .map(|name| name.len()),
        Some(45)
    );
    let over = file("over.toml", &format!("{text}\n"));
    assert_eq!(
        error(&["serve", "--config", &over], &limit),
        format!(
            "{over}: larger than 64 bytes, the most a configuration file may hold \
             (CARMY_CONFIG_MAX_BYTES)"
        )
    );
    // An endless file, by a name that says YAML: refused at the default bound.
    #[cfg(unix)]
    {
        let zero = std::path::Path::new(&file("zero.txt", "")).with_file_name("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("a link");
        let zero = zero.to_string_lossy().into_owned();
        assert_eq!(
            error(&["serve", "--config", &zero], &[]),
            format!(
                "{zero}: larger than 262144 bytes, the most a configuration file may hold \
                 (CARMY_CONFIG_MAX_BYTES)"
            )
        );
    }
    assert!(
        error(&["serve"], &[("CARMY_CONFIG_MAX_BYTES", "lots")])
            .starts_with("CARMY_CONFIG_MAX_BYTES: \"lots\": expected a number of bytes"),
    );
}

#[test]
fn yaml_aliases_may_not_expand_a_file_past_its_size_bound() {
    // An anchor shared by two keys is read as written.
    let shared = file(
        "shared.yaml",
        "tool_settings:\n  allowed_tools: &orders [place_order, cancel_order]\n  \
         require_confirmation: *orders\n",
    );
    let tools = loaded(&["serve", "--config", &shared], &[])
        .settings
        .tool_settings;
    let orders = ["place_order".to_owned(), "cancel_order".to_owned()];
    assert_eq!(tools.allowed_tools.as_deref(), Some(&orders[..]));
    assert_eq!(tools.require_confirmation.as_deref(), Some(&orders[..]));

    // Each level repeats the one before nine times: 9^4 strings from a few lines.
    let mut text = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (name, previous) in [("b", "a"), ("c", "b"), ("d", "c"), ("e", "d")] {
        let items = vec![format!("*{previous}"); 9].join(", ");
        text.push_str(&format!("{name}: &{name} [{items}]\n"));
    }
    let bomb = file("bomb.yaml", &text);
    assert_eq!(
        error(
            &["serve", "--config", &bomb],
            &[("CARMY_CONFIG_MAX_BYTES", "4096")]
        ),
        format!(
            "{bomb}:4: its aliases expand the file past 4096 bytes, the most a configuration \
             file may hold (CARMY_CONFIG_MAX_BYTES)"
        )
    );
}

#[test]
fn nesting_past_the_parsers_depth_is_refused_not_a_crash() {
    let deep = file("deep.yaml", &format!("{}x\n", "- ".repeat(100_000)));
    assert_eq!(
        error(&["serve", "--config", &deep], &[]),
        format!("{deep}:1: nested deeper than 128 levels")
    );
}

#[test]
fn config_and_its_errors_hide_every_shape_of_password() {
    for (store, password) in [
        ("postgres://shop:pa/ss@db/shop", "pa/ss"),
        ("postgres://shop:pa#ss@db/shop", "pa#ss"),
        ("postgres://shop:pa?ss@db/shop", "pa?ss"),
        ("postgres://shop@db/shop?password=s3cret", "s3cret"),
        ("redis+unix:///run/redis.sock?pass=s3cret", "s3cret"),
        ("host=db user=shop password=s3cret", "s3cret"),
    ] {
        let loaded = loaded(&["serve"], &[("CARMY_STORE", store)]);
        for text in [print(&loaded, false), print(&loaded, true)] {
            assert!(!text.contains(password), "{text}");
            assert!(text.contains("***"), "{text}");
        }
    }
    // A URL in any value is shown without its password, an unknown key's too.
    let message = error(
        &["serve"],
        &[(
            "CARMY_SECURITY__OAUTH__ISSUR",
            "https://client:s3cret@auth.example",
        )],
    );
    assert!(
        message.starts_with(
            "CARMY_SECURITY__OAUTH__ISSUR: security.oauth.issur = \
             \"https://client:***@auth.example\": unknown key"
        ),
        "{message}"
    );
}
