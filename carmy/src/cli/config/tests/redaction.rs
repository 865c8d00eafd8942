//! `config`'s output and the errors: each value with its origin, passwords hidden.

use super::support::{error, file, loaded};
use crate::cli::config::*;

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
