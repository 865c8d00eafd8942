//! The attribute's arguments: `#[tool(effect = "read", idempotent, timeout = "30s")]`.
//!
//! Every key is checked on its own and every error is collected, so a user who got three keys
//! wrong sees three errors in one build. Rules that involve the function (its name, its docs)
//! come later, in `tool.rs`.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Path, Token, parse::Parser, punctuated::Punctuated};

use crate::{errors::Errors, name, timeout};

/// The keys `#[tool(...)]` accepts, in the order the docs list them.
const KEYS: &[&str] = &[
    "effect",
    "idempotent",
    "parallel_safe",
    "confirmation",
    "name",
    "title",
    "description",
    "timeout",
    "crate",
];

/// The checked arguments. Absent optional keys stay `None`, so the generated `ToolSpec` only
/// spells out what the user wrote and the runtime's defaults apply to the rest.
pub(crate) struct Args {
    pub(crate) effect: Effect,
    pub(crate) idempotent: Option<bool>,
    pub(crate) parallel_safe: Option<bool>,
    pub(crate) confirmation: Option<Confirmation>,
    /// Already checked against MCP's rules for tool names.
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    /// Already checked to be a valid, non-zero duration.
    pub(crate) timeout: Option<Duration>,
    pub(crate) krate: Option<Path>,
}

/// `effect = "..."`, mirroring `carmy_core::Effect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    None,
    Read,
    Write,
    Destructive,
    ExternalWrite,
}

impl Effect {
    const ALL: [Effect; 5] = [
        Effect::None,
        Effect::Read,
        Effect::Write,
        Effect::Destructive,
        Effect::ExternalWrite,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Effect::None => "none",
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
            Effect::ExternalWrite => "external_write",
        }
    }

    /// The name of the `carmy_core::Effect` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Effect::None => "None",
            Effect::Read => "Read",
            Effect::Write => "Write",
            Effect::Destructive => "Destructive",
            Effect::ExternalWrite => "ExternalWrite",
        }
    }
}

/// `confirmation = "..."`, mirroring `carmy_core::Confirmation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Confirmation {
    Required,
    None,
}

impl Confirmation {
    const ALL: [Confirmation; 2] = [Confirmation::Required, Confirmation::None];

    fn as_str(self) -> &'static str {
        match self {
            Confirmation::Required => "required",
            Confirmation::None => "none",
        }
    }

    /// The name of the `carmy_core::Confirmation` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Confirmation::Required => "Required",
            Confirmation::None => "None",
        }
    }
}

impl Args {
    /// Parses and checks the tokens inside `#[tool(...)]`, reporting every bad key at once.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Args> {
        // A syntax error (`effect: "read"`) stops here: there is nothing sensible to check.
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)?;

        let mut errors = Errors::default();
        let mut seen = Vec::new();
        let mut effect = None;
        let mut args = Args::defaults(None);

        for meta in &metas {
            let Some(key) = known_key(meta.path()) else {
                errors.push(unknown_key(meta.path()));
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

            let result = match key {
                "effect" => parse_effect(meta).map(|value| effect = Some(value)),
                "idempotent" => bool_value(meta, true).map(|value| args.idempotent = Some(value)),
                "parallel_safe" => {
                    bool_value(meta, false).map(|value| args.parallel_safe = Some(value))
                }
                "confirmation" => {
                    parse_confirmation(meta).map(|value| args.confirmation = Some(value))
                }
                "name" => parse_name(meta).map(|value| args.name = Some(value)),
                "title" => string_value(meta).map(|value| args.title = Some(value)),
                "description" => string_value(meta).map(|value| args.description = Some(value)),
                "timeout" => string_value(meta)
                    .and_then(|lit| timeout::parse(&lit))
                    .map(|value| args.timeout = Some(value)),
                "crate" => parse_crate(meta).map(|value| args.krate = Some(value)),
                _ => unreachable!("`known_key` only returns keys from `KEYS`"),
            };
            errors.extend(result);
        }

        // An `effect` that was present but wrong has already been reported.
        if !seen.contains(&"effect") {
            errors.push(syn::Error::new(
                Span::call_site(),
                format!(
                    "missing `effect`; declare what the tool does to the world, e.g. \
                     `#[tool(effect = \"read\")]` (one of {})",
                    expected(Effect::ALL.map(Effect::as_str))
                ),
            ));
        }

        errors.finish()?;
        args.effect = effect.expect("a seen, error-free `effect` has a value");
        Ok(args)
    }

    /// What to expand with when `parse` failed, so that the tool still exists and its uses
    /// elsewhere (`Carmy::new().tool(search)`, `search(input)`) raise no further errors: every
    /// key at its default, except the `crate` path. `None` when that path is unknown: a syntax
    /// error, or a `crate` value that is itself wrong.
    pub(crate) fn fallback(tokens: TokenStream) -> Option<Args> {
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated
            .parse2(tokens)
            .ok()?;
        let krate = match metas.iter().find(|meta| meta.path().is_ident("crate")) {
            Some(meta) => Some(parse_crate(meta).ok()?),
            None => None,
        };
        Some(Args::defaults(krate))
    }

    fn defaults(krate: Option<Path>) -> Args {
        Args {
            effect: Effect::None,
            idempotent: None,
            parallel_safe: None,
            confirmation: None,
            name: None,
            title: None,
            description: None,
            timeout: None,
            krate,
        }
    }
}

fn known_key(path: &Path) -> Option<&'static str> {
    let ident = path.get_ident()?.to_string();
    KEYS.iter().copied().find(|key| *key == ident)
}

fn unknown_key(path: &Path) -> syn::Error {
    let written = quote::quote!(#path).to_string().replace(' ', "");
    syn::Error::new_spanned(
        path,
        format!(
            "unknown key `{written}`; expected one of {}",
            expected(KEYS.iter().copied())
        ),
    )
}

/// `` `a`, `b`, `c` `` for an error message.
fn expected<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    values
        .into_iter()
        .map(|value| format!("`{value}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name of `meta`'s key, as the user wrote it.
fn key_of(meta: &Meta) -> String {
    meta.path()
        .get_ident()
        .map_or_else(String::new, ToString::to_string)
}

/// The value of `key = "string"`.
fn string_value(meta: &Meta) -> syn::Result<LitStr> {
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
fn bool_value(meta: &Meta, flag: bool) -> syn::Result<bool> {
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

fn parse_effect(meta: &Meta) -> syn::Result<Effect> {
    let lit = string_value(meta)?;
    let value = lit.value();
    Effect::ALL
        .into_iter()
        .find(|effect| effect.as_str() == value)
        .ok_or_else(|| {
            syn::Error::new(
                lit.span(),
                format!(
                    "unknown effect `{value}`; expected one of {}",
                    expected(Effect::ALL.map(Effect::as_str))
                ),
            )
        })
}

fn parse_confirmation(meta: &Meta) -> syn::Result<Confirmation> {
    let lit = string_value(meta)?;
    let value = lit.value();
    Confirmation::ALL
        .into_iter()
        .find(|confirmation| confirmation.as_str() == value)
        .ok_or_else(|| {
            syn::Error::new(
                lit.span(),
                format!(
                    "unknown confirmation `{value}`; expected one of {}",
                    expected(Confirmation::ALL.map(Confirmation::as_str))
                ),
            )
        })
}

fn parse_name(meta: &Meta) -> syn::Result<LitStr> {
    let lit = string_value(meta)?;
    name::check(&lit.value()).map_err(|reason| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid tool name `{}`: {reason}; {}",
                lit.value(),
                name::RULE
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

    fn parse(source: &str) -> syn::Result<Args> {
        Args::parse(source.parse().unwrap())
    }

    fn errors(source: &str) -> Vec<(String, String)> {
        errors_of(source, parse(source).err().expect("expected an error"))
    }

    #[test]
    fn the_minimal_attribute_is_an_effect() {
        let args = parse(r#"effect = "read""#).unwrap();
        assert_eq!(args.effect, Effect::Read);
        assert_eq!(args.idempotent, None);
        assert_eq!(args.parallel_safe, None);
        assert_eq!(args.confirmation, None);
        assert!(args.name.is_none() && args.title.is_none() && args.description.is_none());
        assert_eq!(args.timeout, None);
        assert!(args.krate.is_none());
    }

    #[test]
    fn every_key_is_read() {
        let args = parse(
            r#"effect = "external_write", idempotent, parallel_safe = false,
               confirmation = "required", name = "orders.create", title = "Create an order",
               description = "Creates an order.", timeout = "1m 30s", crate = "::renamed","#,
        )
        .unwrap();
        assert_eq!(args.effect, Effect::ExternalWrite);
        assert_eq!(args.idempotent, Some(true));
        assert_eq!(args.parallel_safe, Some(false));
        assert_eq!(args.confirmation, Some(Confirmation::Required));
        assert_eq!(args.name.unwrap().value(), "orders.create");
        assert_eq!(args.title.unwrap().value(), "Create an order");
        assert_eq!(args.description.unwrap().value(), "Creates an order.");
        assert_eq!(args.timeout, Some(Duration::from_secs(90)));
        let krate = args.krate.unwrap();
        assert_eq!(quote::quote!(#krate).to_string(), ":: renamed");
    }

    #[test]
    fn every_effect_and_confirmation_parses() {
        for effect in Effect::ALL {
            let args = parse(&format!("effect = {:?}", effect.as_str())).unwrap();
            assert_eq!(args.effect, effect);
        }
        for confirmation in Confirmation::ALL {
            let source = format!(
                r#"effect = "write", confirmation = {:?}"#,
                confirmation.as_str()
            );
            assert_eq!(parse(&source).unwrap().confirmation, Some(confirmation));
        }
    }

    #[test]
    fn idempotent_is_a_flag_or_a_bool() {
        let idempotent = |source| parse(source).unwrap().idempotent;
        assert_eq!(idempotent(r#"effect = "write", idempotent"#), Some(true));
        assert_eq!(
            idempotent(r#"effect = "write", idempotent = true"#),
            Some(true)
        );
        assert_eq!(
            idempotent(r#"effect = "write", idempotent = false"#),
            Some(false)
        );
    }

    #[test]
    fn a_missing_effect_is_reported_on_the_attribute() {
        let error = parse("idempotent").err().unwrap();
        assert!(error.to_string().starts_with("missing `effect`"), "{error}");
        assert!(parse("").is_err());
    }

    #[test]
    fn an_unknown_effect_lists_the_effects() {
        assert_eq!(
            errors(r#"effect = "reed""#),
            [(
                "unknown effect `reed`; expected one of `none`, `read`, `write`, `destructive`, \
                 `external_write`"
                    .to_owned(),
                r#""reed""#.to_owned()
            )]
        );
    }

    #[test]
    fn an_unknown_key_lists_the_keys() {
        let errors = errors(r#"effect = "read", idempotnet"#);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].0.starts_with(
                "unknown key `idempotnet`; expected one of `effect`, `idempotent`, `parallel_safe`"
            ),
            "{}",
            errors[0].0
        );
        assert_eq!(errors[0].1, "idempotnet");
        // A path is not a key either.
        assert_eq!(
            covered_errors(r#"effect = "read", carmy::name = "x""#),
            ["carmy::name"]
        );
    }

    fn covered_errors(source: &str) -> Vec<String> {
        errors(source).into_iter().map(|(_, text)| text).collect()
    }

    #[test]
    fn a_duplicate_key_is_reported_on_the_second_one() {
        let source = r#"effect = "read", idempotent, effect = "write""#;
        let errors = errors(source);
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].0,
            "duplicate key `effect`; each key may appear once"
        );
        let span = parse(source).err().unwrap().span();
        assert_eq!(covered(source, span), "effect");
        assert_eq!(span.start().column, source.rfind("effect").unwrap());
    }

    #[test]
    fn values_of_the_wrong_type_are_reported_on_the_value() {
        let errors = errors(
            r#"effect = read, idempotent = "yes", parallel_safe, timeout = 30, name = true"#,
        );
        let messages: Vec<_> = errors.iter().map(|(message, _)| message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "expected a string for `effect`; write `effect = \"read\"`",
                "expected `true` or `false` for `idempotent`; write `idempotent`, \
                 `idempotent = true` or `idempotent = false`",
                "expected a boolean; write `parallel_safe = true` or `parallel_safe = false`",
                "expected a string for `timeout`, as in `timeout = \"...\"`",
                "expected a string for `name`, as in `name = \"...\"`",
            ]
        );
        let covered: Vec<_> = errors.iter().map(|(_, text)| text.as_str()).collect();
        assert_eq!(covered, ["read", r#""yes""#, "parallel_safe", "30", "true"]);
    }

    #[test]
    fn all_errors_are_collected() {
        let errors = errors(
            r#"effect = "reed", confirmation = "maybe", name = "no spaces", timeout = "0s", crate = "not a path", colour = "red""#,
        );
        let covered: Vec<_> = errors.iter().map(|(_, text)| text.as_str()).collect();
        assert_eq!(
            covered,
            [
                r#""reed""#,
                r#""maybe""#,
                r#""no spaces""#,
                r#""0s""#,
                r#""not a path""#,
                "colour"
            ]
        );
        assert_eq!(
            errors[1].0,
            "unknown confirmation `maybe`; expected one of `required`, `none`"
        );
        assert!(
            errors[4]
                .0
                .contains("expected the path to the `carmy` crate")
        );
    }

    #[test]
    fn a_syntax_error_stops_parsing() {
        assert!(parse(r#"effect: "read""#).is_err());
    }

    #[test]
    fn the_fallback_keeps_only_a_valid_crate_path() {
        let fallback = |source: &str| Args::fallback(source.parse().unwrap());
        let args = fallback(r#"effect = "reed", idempotent = "yes""#).unwrap();
        assert!(args.krate.is_none() && args.idempotent.is_none());
        let args = fallback(r#"effect = "reed", crate = "::renamed""#).unwrap();
        let krate = args.krate.unwrap();
        assert_eq!(quote::quote!(#krate).to_string(), ":: renamed");
        assert!(fallback(r#"effect = "read", crate = "not a path""#).is_none());
        assert!(fallback(r#"effect: "read""#).is_none());
    }
}
