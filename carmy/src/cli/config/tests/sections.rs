//! The sections with values of their own to read and check: request ids, rate limits, OAuth, worker threads.

use super::support::{error, file, load_with, loaded};
use crate::cli::config::*;

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
