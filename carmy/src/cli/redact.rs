//! What messages, logs and `config` show of a value that may hold a password (a store's
//! address above all): never the password.
//!
//! It is hidden wherever a driver would read one, so that a password written in any of the
//! forms they accept, encoded or not, stays hidden:
//!
//! - in a URL's user information, which tokio-postgres reads up to the first `@` whatever
//!   comes before it (`/`, `?`, `#` included), and a WHATWG parser (redis-rs's) up to the last
//!   `@` before the path: everything from the first `:` to the later of the two is hidden;
//! - in a URL's query, `password=` (tokio-postgres) and `pass=` (redis-rs on a Unix socket),
//!   their names percent-decoded as the drivers decode them, each value up to the next `&`;
//! - in PostgreSQL's `key=value` form, a `password` value, quoted or not.

use percent_encoding::percent_decode_str;

/// What stands for a hidden password.
const HIDDEN: &str = "***";

/// The names a password goes by, in a query or a `key=value` string.
const PASSWORD_KEYS: [&str; 2] = ["password", "pass"];

/// `text` with every password in it replaced by `***`.
pub(super) fn redacted(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, rest)) if is_scheme(scheme) => format!("{scheme}://{}", after_scheme(rest)),
        _ => key_values(text),
    }
}

/// RFC 3986's scheme: a letter, then letters, digits, `+`, `-` and `.`.
fn is_scheme(scheme: &str) -> bool {
    let mut chars = scheme.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && chars.all(|next| next.is_ascii_alphanumeric() || matches!(next, '+' | '-' | '.'))
}

/// A URL past its `scheme://`: user information, then the rest with its query.
fn after_scheme(rest: &str) -> String {
    let authority = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = [rest.find('@'), rest[..authority].rfind('@')]
        .into_iter()
        .flatten()
        .max();
    let mut shown = String::with_capacity(rest.len());
    let rest = match at {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    shown.push_str(user);
                    shown.push(':');
                    shown.push_str(HIDDEN);
                }
                None => shown.push_str(userinfo),
            }
            shown.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    match rest.split_once('?') {
        Some((place, query)) => {
            shown.push_str(place);
            shown.push('?');
            let parameters: Vec<String> = query.split('&').map(parameter).collect();
            shown.push_str(&parameters.join("&"));
        }
        None => shown.push_str(rest),
    }
    shown
}

/// One `name=value` of a query, its value hidden if the name is a password's.
fn parameter(parameter: &str) -> String {
    match parameter.split_once('=') {
        Some((name, _)) if is_password(&percent_decode_str(name).decode_utf8_lossy()) => {
            format!("{name}={HIDDEN}")
        }
        _ => parameter.to_owned(),
    }
}

fn is_password(name: &str) -> bool {
    PASSWORD_KEYS
        .iter()
        .any(|known| name.eq_ignore_ascii_case(known))
}

/// `key = value` pairs apart by whitespace, as libpq (and tokio-postgres) reads them, with
/// the passwords' values hidden; from the first thing that is not a pair on, `text` as it is.
fn key_values(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let pair = rest.trim_start();
        shown.push_str(&rest[..rest.len() - pair.len()]);
        rest = pair;
        let key_end = rest
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len());
        let after_key = rest[key_end..].trim_start();
        let Some(value) = after_key.strip_prefix('=').filter(|_| key_end > 0) else {
            shown.push_str(rest);
            return shown;
        };
        let value = value.trim_start();
        let value_start = rest.len() - value.len();
        let value_end = value_start + value_length(value);
        shown.push_str(&rest[..value_start]);
        if is_password(&rest[..key_end]) {
            shown.push_str(HIDDEN);
        } else {
            shown.push_str(&rest[value_start..value_end]);
        }
        rest = &rest[value_end..];
    }
}

/// The length of the value `text` starts with: quoted with `'`, or up to whitespace; `\`
/// escapes the character after it. A quote never closed runs to the end.
fn value_length(text: &str) -> usize {
    let quoted = text.starts_with('\'');
    let mut chars = text.char_indices().skip(usize::from(quoted));
    while let Some((index, char)) = chars.next() {
        match char {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return index + 1,
            space if !quoted && space.is_whitespace() => return index,
            _ => {}
        }
    }
    text.len()
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

    #[test]
    fn a_password_with_reserved_characters_is_hidden_whole() {
        // tokio-postgres reads the credentials up to the first `@`, whatever comes before it.
        for (url, shown) in [
            (
                "postgres://carmy:pa/ss@db:5432/shop",
                "postgres://carmy:***@db:5432/shop",
            ),
            (
                "postgres://carmy:pa#ss@db/shop",
                "postgres://carmy:***@db/shop",
            ),
            (
                "postgres://carmy:pa?ss@db/shop",
                "postgres://carmy:***@db/shop",
            ),
            (
                "postgresql://carmy:pa%2Fss%40@db/shop",
                "postgresql://carmy:***@db/shop",
            ),
            ("redis://:pa/ss@cache:6379/0", "redis://:***@cache:6379/0"),
            ("rediss://user:p#w@cache/1", "rediss://user:***@cache/1"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn a_password_in_the_query_is_hidden() {
        for (url, shown) in [
            (
                "postgres://carmy@db/shop?password=s3cret&sslmode=disable",
                "postgres://carmy@db/shop?password=***&sslmode=disable",
            ),
            (
                "postgres://db/shop?sslmode=disable&password=s3cret",
                "postgres://db/shop?sslmode=disable&password=***",
            ),
            // The key's name is percent-decoded by the driver.
            (
                "postgres://db/shop?pass%77ord=s3cret",
                "postgres://db/shop?pass%77ord=***",
            ),
            // A `#` does not end a value for tokio-postgres.
            (
                "postgres://db/shop?password=s3#cret&sslmode=disable",
                "postgres://db/shop?password=***&sslmode=disable",
            ),
            // Redis over a Unix socket takes its password as `pass`.
            (
                "redis+unix:///run/redis.sock?db=1&pass=s3cret",
                "redis+unix:///run/redis.sock?db=1&pass=***",
            ),
            (
                "redis://cache/0?protocol=resp3&password=s3cret",
                "redis://cache/0?protocol=resp3&password=***",
            ),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn a_password_in_a_key_value_connection_string_is_hidden() {
        assert_eq!(
            redacted("host=db user=carmy password=s3cret dbname=shop"),
            "host=db user=carmy password=*** dbname=shop"
        );
        assert_eq!(
            redacted(r"host=db password = 's3 cr\'et' dbname=shop"),
            "host=db password = *** dbname=shop"
        );
        assert_eq!(
            redacted(r"password=s3\ cret host=db"),
            "password=*** host=db"
        );
    }

    #[test]
    fn what_holds_no_password_is_shown_as_it_is() {
        for text in [
            "memory",
            "/var/lib/shop/store.sqlite",
            "./data:v2/store.sqlite",
            "redis://cache:6379/",
            "postgres://carmy@db:5432/shop?sslmode=disable",
            "host=db user=carmy dbname=shop",
            "warn,shop=debug",
            "https://auth.example.com",
        ] {
            assert_eq!(redacted(text), text);
        }
    }
}
