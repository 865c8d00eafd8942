//! `mime_type = "application/json"`: a media type, `type/subtype` with optional parameters
//! (`text/plain; charset=utf-8`).
//!
//! Type and subtype are RFC 6838 restricted names: a letter or digit, then up to 126 letters,
//! digits and `! # $ & - ^ _ . +`. A parameter is `name=value`, the value a token or a quoted
//! string. Clients pick a renderer by this string, so a typo (`application/jsn` passes, but
//! `json` or `application /json` do not) is worth a compile error.

const MAX_NAME_LEN: usize = 127;

/// Checks `value`, or says what is wrong with it.
pub(crate) fn check(value: &str) -> Result<(), String> {
    let (essence, parameters) = match value.split_once(';') {
        Some((essence, parameters)) => (essence, Some(parameters)),
        None => (value, None),
    };
    let Some((kind, subtype)) = essence.split_once('/') else {
        return Err("it has no `/` between type and subtype".to_owned());
    };
    restricted_name(kind, "type")?;
    restricted_name(subtype, "subtype")?;
    for parameter in parameters.into_iter().flat_map(|text| text.split(';')) {
        let parameter = parameter.trim_matches(|c| c == ' ' || c == '\t');
        let Some((name, value)) = parameter.split_once('=') else {
            return Err(format!("the parameter `{parameter}` is not `name=value`"));
        };
        restricted_name(name, "parameter name")?;
        let quoted = value.len() >= 2 && value.starts_with('"') && value.ends_with('"');
        if !quoted && (value.is_empty() || !value.chars().all(is_token_char)) {
            return Err(format!(
                "the value of `{name}` is neither a token nor a quoted string"
            ));
        }
    }
    Ok(())
}

fn restricted_name(name: &str, what: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err(format!("its {what} is empty"));
    };
    if !first.is_ascii_alphanumeric() {
        return Err(format!("its {what} `{name}` starts with {first:?}"));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !c.is_ascii_alphanumeric() && !"!#$&-^_.+".contains(c))
    {
        return Err(format!("{bad:?} is not allowed in its {what} `{name}`"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "its {what} is longer than {MAX_NAME_LEN} characters"
        ));
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_pass() {
        for value in [
            "application/json",
            "text/markdown",
            "image/png",
            "image/svg+xml",
            "application/vnd.api+json",
            "text/plain; charset=utf-8",
            "text/plain;charset=\"utf-8\";format=flowed",
            "application/x-www-form-urlencoded",
        ] {
            assert_eq!(check(value), Ok(()), "{value}");
        }
    }

    #[test]
    fn mistakes_say_why() {
        for (value, reason) in [
            ("json", "it has no `/` between type and subtype"),
            ("", "it has no `/` between type and subtype"),
            ("application/", "its subtype is empty"),
            ("/json", "its type is empty"),
            (
                "application /json",
                "' ' is not allowed in its type `application `",
            ),
            (
                "text/plain/x",
                "'/' is not allowed in its subtype `plain/x`",
            ),
            ("text/.hidden", "its subtype `.hidden` starts with '.'"),
            (
                "text/plain; charset",
                "the parameter `charset` is not `name=value`",
            ),
            (
                "text/plain; charset=",
                "the value of `charset` is neither a token nor a quoted string",
            ),
            (
                "text/plain; charset=utf 8",
                "the value of `charset` is neither a token nor a quoted string",
            ),
            ("text/plain;", "the parameter `` is not `name=value`"),
        ] {
            assert_eq!(check(value).unwrap_err(), reason, "{value:?}");
        }
        assert!(check(&format!("text/{}", "x".repeat(128))).is_err());
    }
}
