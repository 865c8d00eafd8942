//! The configuration file: its three formats, and the files that are refused.

use super::support::{error, file, loaded};
use crate::cli::config::*;

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
            message.starts_with(path.as_str())
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
        let beside = file("zero.txt", "");
        let zero = std::path::Path::new(&*beside).with_file_name("zero.yaml");
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
