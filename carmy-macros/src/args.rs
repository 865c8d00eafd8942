//! Reading an attribute's arguments: `key = "value", flag, ...`.
//!
//! Every key is checked on its own and every error is collected, so a user who got three keys
//! wrong sees three errors in one build. Which keys an attribute takes is its own business
//! (`tool.rs`, `resource.rs`); the reading of keys, of their values, and of the keys every
//! attribute shares (`name`, `title`, `description`, `timeout`, `crate`) is here, once. Rules
//! that involve the function (its name, its input) come later, in `function.rs`.

use std::time::Duration;

use proc_macro2::TokenStream;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Path, Token, parse::Parser, punctuated::Punctuated};

use crate::{errors::Errors, kind::Kind, name, suggest, timeout};

/// The keys every attribute takes. Absent keys stay `None`, so the generated spec only spells
/// out what the user wrote and the runtime's defaults apply to the rest.
#[derive(Default)]
pub(crate) struct Common {
    /// Already checked against the naming rule.
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// Already checked to be a valid, non-zero duration.
    pub(crate) timeout: Option<Duration>,
    pub(crate) krate: Option<Path>,
}

impl Common {
    /// Reads one of the shared keys.
    ///
    /// # Panics
    /// On another key: an attribute passes its own keys to its own parsers.
    pub(crate) fn read(&mut self, kind: Kind, key: &str, meta: &Meta) -> syn::Result<()> {
        match key {
            "name" => parse_name(kind, meta).map(|value| self.name = Some(value)),
            "title" => string_value(meta).map(|value| self.title = Some(value)),
            "description" => string_value(meta).map(|value| self.description = Some(value)),
            "timeout" => string_value(meta)
                .and_then(|lit| timeout::parse(&lit))
                .map(|value| self.timeout = Some(value)),
            "crate" => parse_crate(meta).map(|value| self.krate = Some(value)),
            _ => unreachable!("`{key}` is not a shared key"),
        }
    }

    /// What to expand with when an attribute's arguments were wrong, so that the item still
    /// exists and its uses elsewhere raise no further errors: every key at its default, except
    /// the `crate` path. `None` when that path is unknown: a syntax error, or a `crate` value
    /// that is itself wrong.
    pub(crate) fn fallback(tokens: TokenStream) -> Option<Common> {
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated
            .parse2(tokens)
            .ok()?;
        let krate = match metas.iter().find(|meta| meta.path().is_ident("crate")) {
            Some(meta) => Some(parse_crate(meta).ok()?),
            None => None,
        };
        Some(Common {
            krate,
            ..Common::default()
        })
    }
}

/// Reads `tokens` as arguments among `keys`: an unknown key or one given twice is an error on
/// its path; every other key goes to `read` along with its tokens. Errors go to `errors`; the
/// keys that were present come back, for the caller's required keys. A syntax error (`effect:
/// "read"`) is returned at once: there is nothing sensible to check.
pub(crate) fn read(
    tokens: TokenStream,
    keys: &[&'static str],
    errors: &mut Errors,
    mut read: impl FnMut(&'static str, &Meta) -> syn::Result<()>,
) -> syn::Result<Vec<&'static str>> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)?;
    let mut seen = Vec::new();
    for meta in &metas {
        let Some(key) = known_key(keys, meta.path()) else {
            errors.push(unknown_key(keys, meta.path()));
            continue;
        };
        if seen.contains(&key) {
            errors.push(syn::Error::new_spanned(
                meta.path(),
                format!("duplicate key `{key}`; each key may appear once"),
            ));
            continue;
        }
        seen.push(key);
        errors.extend(read(key, meta));
    }
    Ok(seen)
}

fn known_key(keys: &[&'static str], path: &Path) -> Option<&'static str> {
    let ident = path.get_ident()?.to_string();
    keys.iter().copied().find(|key| *key == ident)
}

fn unknown_key(keys: &[&'static str], path: &Path) -> syn::Error {
    let written = quote::quote!(#path).to_string().replace(' ', "");
    syn::Error::new_spanned(
        path,
        format!(
            "unknown key `{written}`; {}",
            expected_instead(&written, keys.iter().copied())
        ),
    )
}

/// `` `a`, `b`, `c` `` for an error message.
pub(crate) fn expected<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    values
        .into_iter()
        .map(|value| format!("`{value}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What to write instead of `written`, which is none of `values`: the closest of them first,
/// when one is close enough to be what was meant, then all of them.
pub(crate) fn expected_instead<'a>(
    written: &str,
    values: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    let all = expected(values.clone());
    match suggest::closest(written, values) {
        Some(close) => format!("did you mean `{close}`? (expected one of {all})"),
        None => format!("expected one of {all}"),
    }
}

/// The name of `meta`'s key, as the user wrote it.
fn key_of(meta: &Meta) -> String {
    meta.path()
        .get_ident()
        .map_or_else(String::new, ToString::to_string)
}

/// The value of `key = "string"`.
pub(crate) fn string_value(meta: &Meta) -> syn::Result<LitStr> {
    let key = key_of(meta);
    match meta {
        Meta::NameValue(name_value) => match &name_value.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Ok(lit.clone()),
            // `effect = read`: the user meant the string.
            Expr::Path(path) if path.path.get_ident().is_some() => {
                let word = path.path.get_ident().map(ToString::to_string);
                Err(syn::Error::new_spanned(
                    &name_value.value,
                    format!(
                        "expected a string for `{key}`; write `{key} = \"{}\"`",
                        word.unwrap_or_default()
                    ),
                ))
            }
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected a string for `{key}`, as in `{key} = \"...\"`"),
            )),
        },
        Meta::Path(path) => Err(syn::Error::new_spanned(
            path,
            format!("`{key}` needs a value, as in `{key} = \"...\"`"),
        )),
        Meta::List(list) => Err(syn::Error::new_spanned(
            list,
            format!("expected `{key} = \"...\"`"),
        )),
    }
}

/// The value of a boolean key: `key = true`, `key = false` or, where `flag` allows it, `key`.
pub(crate) fn bool_value(meta: &Meta, flag: bool) -> syn::Result<bool> {
    let key = key_of(meta);
    let usage = if flag {
        format!("`{key}`, `{key} = true` or `{key} = false`")
    } else {
        format!("`{key} = true` or `{key} = false`")
    };
    match meta {
        Meta::Path(_) if flag => Ok(true),
        Meta::NameValue(name_value) => match &name_value.value {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(lit),
                ..
            }) => Ok(lit.value),
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected `true` or `false` for `{key}`; write {usage}"),
            )),
        },
        _ => Err(syn::Error::new_spanned(
            meta,
            format!("expected a boolean; write {usage}"),
        )),
    }
}

/// One of `values`, by the name `as_str` gives it; `what` names the key in the error.
pub(crate) fn one_of<T: Copy>(
    meta: &Meta,
    what: &str,
    values: &[T],
    as_str: fn(T) -> &'static str,
) -> syn::Result<T> {
    let lit = string_value(meta)?;
    let value = lit.value();
    values
        .iter()
        .copied()
        .find(|candidate| as_str(*candidate) == value)
        .ok_or_else(|| {
            syn::Error::new(
                lit.span(),
                format!(
                    "unknown {what} `{value}`; {}",
                    expected_instead(&value, values.iter().map(|value| as_str(*value)))
                ),
            )
        })
}

fn parse_name(kind: Kind, meta: &Meta) -> syn::Result<LitStr> {
    let lit = string_value(meta)?;
    name::check(&lit.value()).map_err(|reason| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid {} name `{}`: {reason}; {}",
                kind.noun(),
                lit.value(),
                name::rule(kind)
            ),
        )
    })?;
    Ok(lit)
}

/// `crate = "::path::to::carmy"`: the path is used as written, like tokio's `crate` option.
fn parse_crate(meta: &Meta) -> syn::Result<Path> {
    let lit = string_value(meta)?;
    lit.parse::<Path>().map_err(|_| {
        syn::Error::new(
            lit.span(),
            format!(
                "`{}` is not a path; expected the path to the `carmy` crate, e.g. `crate = \"::carmy\"`",
                lit.value()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{covered, errors_of};

    const KEYS: &[&str] = &["flag", "text", "name", "crate"];

    /// Reads `source` with the keys above, `flag` a boolean flag and the rest shared or strings.
    fn read_str(source: &str) -> (Vec<&'static str>, Common, syn::Result<()>) {
        let mut errors = Errors::default();
        let mut common = Common::default();
        let seen = read(
            source.parse().unwrap(),
            KEYS,
            &mut errors,
            |key, meta| match key {
                "flag" => bool_value(meta, true).map(drop),
                "text" => string_value(meta).map(drop),
                _ => common.read(Kind::Resource, key, meta),
            },
        );
        let seen = seen.unwrap_or_else(|error| panic!("{error}"));
        (seen, common, errors.finish())
    }

    fn errors(source: &str) -> Vec<(String, String)> {
        errors_of(source, read_str(source).2.expect_err("expected an error"))
    }

    #[test]
    fn known_keys_reach_their_parser_and_come_back() {
        let (seen, common, result) = read_str(r#"text = "a", flag, name = "n", crate = "::c""#);
        assert!(result.is_ok());
        assert_eq!(seen, ["text", "flag", "name", "crate"]);
        assert_eq!(common.name.unwrap().value(), "n");
        assert!(common.krate.is_some());
    }

    #[test]
    fn an_unknown_key_lists_the_keys() {
        assert_eq!(
            errors(r#"flag, colour = "red", a::name = "x""#),
            [
                (
                    "unknown key `colour`; expected one of `flag`, `text`, `name`, `crate`"
                        .to_owned(),
                    "colour".to_owned()
                ),
                (
                    "unknown key `a::name`; expected one of `flag`, `text`, `name`, `crate`"
                        .to_owned(),
                    "a::name".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn a_duplicate_key_is_reported_on_the_second_one() {
        let source = r#"text = "a", flag, text = "b""#;
        assert_eq!(
            errors(source),
            [(
                "duplicate key `text`; each key may appear once".to_owned(),
                "text".to_owned()
            )]
        );
        let span = read_str(source).2.err().unwrap().span();
        assert_eq!(covered(source, span), "text");
        assert_eq!(span.start().column, source.rfind("text").unwrap());
    }

    #[test]
    fn shared_keys_speak_of_the_kind() {
        assert_eq!(
            errors(r#"name = "a b""#)[0].0,
            "invalid resource name `a b`: ' ' is not allowed; resource names, like MCP tool \
             names, are 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` and `.`"
        );
    }

    #[test]
    fn a_syntax_error_stops_reading() {
        let mut errors = Errors::default();
        let result = read(
            r#"text: "a""#.parse().unwrap(),
            KEYS,
            &mut errors,
            |_, _| Ok(()),
        );
        assert!(result.is_err());
        assert!(errors.finish().is_ok());
    }

    #[test]
    fn the_fallback_keeps_only_a_valid_crate_path() {
        let fallback = |source: &str| Common::fallback(source.parse().unwrap());
        let common = fallback(r#"effect = "reed", title = 3"#).unwrap();
        assert!(common.krate.is_none() && common.title.is_none());
        let krate = fallback(r#"effect = "reed", crate = "::renamed""#)
            .unwrap()
            .krate
            .unwrap();
        assert_eq!(quote::quote!(#krate).to_string(), ":: renamed");
        assert!(fallback(r#"effect = "read", crate = "not a path""#).is_none());
        assert!(fallback(r#"effect: "read""#).is_none());
    }
}
