//! URI templates, RFC 6570 level 1: `shop://products/{id}`. A template names a family of
//! resources; a URI that matches it binds each variable to the part it stands for.
//!
//! Simple expansion percent-encodes every character but the unreserved ones (`A-Z a-z 0-9 - .
//! _ ~`), so a variable's part of a URI is a run of unreserved characters and `%XX` escapes,
//! decoded when matched. Only `{name}` is read: the operators of the higher levels (`{+path}`,
//! `{?query}`...) and two variables with nothing between them, which could not be told apart,
//! are refused when the template is parsed.

use std::fmt;

use percent_encoding::utf8_percent_encode;

use crate::percent;

/// A parsed URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    source: &'static str,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(&'static str),
    Variable(&'static str),
}

/// Why a template cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template `{template}`: {reason}")]
pub struct TemplateError {
    template: String,
    reason: String,
}

impl UriTemplate {
    /// Parses `template`.
    pub fn parse(template: &'static str) -> Result<Self, TemplateError> {
        let fail = |reason: String| TemplateError {
            template: template.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest));
                    break;
                }
                Some(at) if rest.as_bytes()[at] == b'}' => {
                    return Err(fail("a `}` that closes nothing".into()));
                }
                Some(at) => {
                    if at > 0 {
                        parts.push(Part::Literal(&rest[..at]));
                    }
                    let Some(end) = rest[at..].find('}') else {
                        return Err(fail("a `{` that is never closed".into()));
                    };
                    let name = &rest[at + 1..at + end];
                    check_name(name).map_err(fail)?;
                    if matches!(parts.last(), Some(Part::Variable(_))) {
                        return Err(fail(format!(
                            "`{{{name}}}` follows another variable directly: put a literal \
                             between them, or they cannot be told apart"
                        )));
                    }
                    if parts.contains(&Part::Variable(name)) {
                        return Err(fail(format!("`{{{name}}}` appears twice")));
                    }
                    parts.push(Part::Variable(name));
                    rest = &rest[at + end + 1..];
                }
            }
        }
        Ok(Self {
            source: template,
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &'static str {
        self.source
    }

    /// Whether the template has no variable: a fixed URI.
    pub fn is_fixed(&self) -> bool {
        self.variables().next().is_none()
    }

    /// The variables, in the order they appear.
    pub fn variables(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(*name),
            Part::Literal(_) => None,
        })
    }

    /// The values of the variables when `uri` is one of this template's URIs, decoded.
    pub fn matches(&self, uri: &str) -> Option<Vec<(&'static str, String)>> {
        let mut bound = Vec::new();
        match_parts(&self.parts, uri, &mut bound).then_some(bound)
    }

    /// The URI for `values` (one per variable, by name), each percent-encoded.
    pub fn expand(&self, values: &[(&str, &str)]) -> Option<String> {
        let mut uri = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => uri.push_str(text),
                Part::Variable(name) => {
                    let (_, value) = values.iter().find(|(key, _)| key == name)?;
                    encode(value, &mut uri);
                }
            }
        }
        Some(uri)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.source)
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if let Some(operator) = name.chars().next().filter(|c| "+#./;?&=,!@|".contains(*c)) {
        return Err(format!(
            "`{{{name}}}` uses the operator `{operator}`; only simple `{{name}}` expansion is \
             supported"
        ));
    }
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{{{name}}}` is not a variable name: use letters, digits and `_`"
        ))
    }
}

/// Whether `byte` may stand in a variable's part of a URI: unreserved, or part of an escape.
fn in_value(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'%')
}

fn match_parts(parts: &[Part], uri: &str, bound: &mut Vec<(&'static str, String)>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(text), rest)) => {
            uri.starts_with(text) && match_parts(rest, &uri[text.len()..], bound)
        }
        Some((Part::Variable(name), rest)) => {
            let run = uri.bytes().take_while(|byte| in_value(*byte)).count();
            // The longest value that leaves a match for the rest, down to one character.
            for end in (1..=run).rev() {
                let Some(value) = decode(&uri[..end]) else {
                    continue;
                };
                let depth = bound.len();
                bound.push((name, value));
                if match_parts(rest, &uri[end..], bound) {
                    return true;
                }
                bound.truncate(depth);
            }
            false
        }
    }
}

/// `%XX` escapes decoded, as UTF-8; `None` for a broken escape or invalid UTF-8.
fn decode(text: &str) -> Option<String> {
    String::from_utf8(percent::decode(text)?).ok()
}

/// `value` with every byte but the unreserved ones escaped.
fn encode(value: &str, out: &mut String) {
    out.extend(utf8_percent_encode(value, percent::UNRESERVED));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(source: &'static str) -> UriTemplate {
        UriTemplate::parse(source).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn variables_bind_to_their_part_of_the_uri() {
        let products = template("shop://products/{id}");
        assert_eq!(products.variables().collect::<Vec<_>>(), ["id"]);
        assert_eq!(
            products.matches("shop://products/sku-001"),
            Some(vec![("id", "sku-001".into())])
        );
        assert_eq!(products.matches("shop://products/"), None);
        assert_eq!(products.matches("shop://products/a/b"), None);
        assert_eq!(products.matches("shop://orders/a"), None);
        // Escapes are decoded; a decoded `/` is a value, not a separator.
        assert_eq!(
            products.matches("shop://products/a%2Fb%20c"),
            Some(vec![("id", "a/b c".into())])
        );
        assert_eq!(products.matches("shop://products/%zz"), None);
        assert_eq!(products.matches("shop://products/%ff"), None, "not UTF-8");

        let two = template("shop://orders/{order}/lines/{line}.json");
        assert_eq!(
            two.matches("shop://orders/ord-1/lines/2.json"),
            Some(vec![("order", "ord-1".into()), ("line", "2".into())])
        );
        // The `.` of `.json` is unreserved: the match backs off to find it.
        assert_eq!(
            two.matches("shop://orders/o.1/lines/a.b.json"),
            Some(vec![("order", "o.1".into()), ("line", "a.b".into())])
        );
        assert!(template("shop://policies/returns").is_fixed());
        assert_eq!(
            template("shop://policies/returns").matches("shop://policies/returns"),
            Some(vec![])
        );
    }

    #[test]
    fn expansion_round_trips_through_matching() {
        let products = template("shop://products/{id}");
        let uri = products.expand(&[("id", "a/b c")]).unwrap();
        assert_eq!(uri, "shop://products/a%2Fb%20c");
        assert_eq!(products.matches(&uri), Some(vec![("id", "a/b c".into())]));
        assert_eq!(products.expand(&[]), None);
    }

    #[test]
    fn templates_beyond_level_one_or_ambiguous_are_refused() {
        for (source, reason) in [
            ("shop://{+path}", "operator `+`"),
            ("shop://search{?q}", "operator `?`"),
            ("shop://{a}{b}", "follows another variable"),
            ("shop://{a}/{a}", "appears twice"),
            ("shop://{a", "never closed"),
            ("shop://a}", "closes nothing"),
            ("shop://{}", "not a variable name"),
            ("shop://{a-b}", "not a variable name"),
        ] {
            let error = UriTemplate::parse(source).unwrap_err().to_string();
            assert!(error.contains(reason), "{source}: {error}");
        }
    }
}
