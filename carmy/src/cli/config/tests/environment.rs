//! The `CARMY_...` variables: which count as configuration, and how they are read.

use super::support::{loaded, parse};
#[cfg(feature = "store")]
use crate::cli::Cli;
use crate::cli::config::*;

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
