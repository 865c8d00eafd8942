//! What messages, logs and `config` show of a store URL: never its password.

/// `url` with its password, if any, replaced by `***`: what error messages and logs show.
pub(super) fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            redacted("postgres://carmy:s3cret@db:5432/shop?sslmode=disable"),
            "postgres://carmy:***@db:5432/shop?sslmode=disable"
        );
        assert_eq!(
            redacted("redis://:s3cret@cache:6379/0"),
            "redis://:***@cache:6379/0"
        );
        assert_eq!(redacted("redis://cache:6379/"), "redis://cache:6379/");
        assert_eq!(
            redacted("postgres://carmy@db/shop"),
            "postgres://carmy@db/shop"
        );
        // An `@` in the password: the host is what follows the last one.
        assert_eq!(redacted("postgres://u:p@ss@db/x"), "postgres://u:***@db/x");
    }
}
