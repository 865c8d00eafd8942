//! The rule for names: 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`.
//!
//! It is MCP's rule for tool names. MCP sets none for resource and prompt names, but their name
//! is what the catalog keeps unique and what execution records carry as their target (and a
//! prompt's is what a client shows as a slash command), so they follow the same rule.

use crate::kind::Kind;

const MAX_LEN: usize = 128;

/// The rule, for error messages.
pub(crate) fn rule(kind: Kind) -> &'static str {
    match kind {
        Kind::Tool => {
            "MCP tool names are 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`"
        }
        Kind::Resource => {
            "resource names, like MCP tool names, are 1 to 128 characters of `A-Z`, `a-z`, \
             `0-9`, `_`, `-` and `.`"
        }
        Kind::Prompt => {
            "prompt names, like MCP tool names, are 1 to 128 characters of `A-Z`, `a-z`, \
             `0-9`, `_`, `-` and `.`"
        }
    }
}

/// Checks `name`, or says what is wrong with it (e.g. "' ' is not allowed").
pub(crate) fn check(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() {
        return Err("it is empty".to_owned());
    }
    if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
        return Err(format!("{bad:?} is not allowed"));
    }
    if name.len() > MAX_LEN {
        return Err(format!("it is {} characters long", name.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names() {
        for name in [
            "search",
            "orders.create",
            "get-user_v2",
            "A",
            &"x".repeat(128),
        ] {
            assert_eq!(check(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn invalid_names_say_why() {
        assert_eq!(check("").unwrap_err(), "it is empty");
        assert_eq!(check("no spaces").unwrap_err(), "' ' is not allowed");
        assert_eq!(check("café").unwrap_err(), "'é' is not allowed");
        assert_eq!(check("a/b").unwrap_err(), "'/' is not allowed");
        assert_eq!(
            check(&"x".repeat(129)).unwrap_err(),
            "it is 129 characters long"
        );
    }
}
