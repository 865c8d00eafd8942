//! MCP's rule for tool names: 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`.

const MAX_LEN: usize = 128;
const RULE: &str =
    "MCP tool names are 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`";

/// Checks `name`, or says what is wrong with it.
pub(crate) fn check(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() {
        return Err(format!("the tool name is empty; {RULE}"));
    }
    if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
        return Err(format!(
            "invalid tool name `{name}`: {bad:?} is not allowed; {RULE}"
        ));
    }
    if name.len() > MAX_LEN {
        return Err(format!(
            "invalid tool name `{name}`: it is {} characters long; {RULE}",
            name.len()
        ));
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
        assert!(check("").unwrap_err().starts_with("the tool name is empty"));
        assert!(
            check("no spaces")
                .unwrap_err()
                .contains("' ' is not allowed")
        );
        assert!(check("café").unwrap_err().contains("'é' is not allowed"));
        assert!(check("a/b").unwrap_err().contains("'/' is not allowed"));
        assert!(
            check(&"x".repeat(129))
                .unwrap_err()
                .contains("129 characters long")
        );
    }
}
