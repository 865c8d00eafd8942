//! Unknown keys and bad values, named with where they were written.

use super::support::{error, file};

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
             resources, prompts, logging, tool_settings, store, request_ids"
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
fn a_bad_disabled_rule_is_named_with_where_it_was_written() {
    let tools = file(
        "tools.toml",
        "[tool_settings]\ndisabled = [\"send_*\", \"effect:loud\"]\n",
    );
    let message = error(&["serve", "--config", &tools], &[]);
    assert!(
        message.starts_with(&format!("{tools}:2: tool_settings.disabled = ")),
        "{message}"
    );
    assert!(message.contains("unknown effect `loud`"), "{message}");

    // A prompt's rule in the tools' list belongs in the prompts' own.
    let misplaced = file(
        "misplaced.toml",
        "[tool_settings]\ndisabled = [\"prompt:draft\"]\n",
    );
    let message = error(&["serve", "--config", &misplaced], &[]);
    assert!(
        message.contains("`prompt:draft`: only tools; resources and prompts have their own"),
        "{message}"
    );

    let prompts = file("prompts.yaml", "prompts:\n  disabled: [\"draft reply\"]\n");
    let message = error(&["serve", "--config", &prompts], &[]);
    assert!(
        message.starts_with(&format!("{prompts}:2: prompts.disabled = ")),
        "{message}"
    );
}
