//! `rate_limit = "30/min"`, `"30/min, burst 5"` or `"unlimited"`: how often one principal may
//! call the tool, parsed at compile time into a `carmy_core::RateLimit`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

/// A parsed `rate_limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RateLimit {
    Unlimited,
    Bucket {
        requests: u32,
        per: Per,
        burst: Option<u32>,
    },
}

/// The period the requests are counted over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Per {
    Second,
    Minute,
    Hour,
}

const EXAMPLE: &str = r#"expected a rate like "30/min", "5/s, burst 10", "1000/h" or "unlimited""#;

/// The rate limit in `lit`; anything else is an error on the literal.
pub(crate) fn parse(lit: &LitStr) -> syn::Result<RateLimit> {
    let value = lit.value();
    let fail = |problem: &str| {
        syn::Error::new(
            lit.span(),
            format!("invalid rate_limit `{value}`: {problem}; {EXAMPLE}"),
        )
    };
    let text = value.trim();
    if text == "unlimited" {
        return Ok(RateLimit::Unlimited);
    }
    let (rate, burst) = match text.split_once(',') {
        Some((rate, burst)) => (rate.trim(), Some(burst.trim())),
        None => (text, None),
    };
    let (requests, unit) = rate.split_once('/').ok_or_else(|| fail("no `/`"))?;
    let requests =
        count(requests.trim()).map_err(|problem| fail(&format!("the requests {problem}")))?;
    let per = match unit.trim() {
        "s" | "sec" | "second" => Per::Second,
        "min" | "minute" => Per::Minute,
        "h" | "hour" => Per::Hour,
        other => return Err(fail(&format!("unknown unit `{other}` (s, min or h)"))),
    };
    let burst = match burst {
        None => None,
        Some(burst) => {
            let size = burst
                .strip_prefix("burst")
                .ok_or_else(|| fail("after the comma comes `burst N`"))?;
            Some(count(size.trim()).map_err(|problem| fail(&format!("the burst {problem}")))?)
        }
    };
    Ok(RateLimit::Bucket {
        requests,
        per,
        burst,
    })
}

/// A count of calls: a whole number, at least one.
fn count(text: &str) -> Result<u32, &'static str> {
    match text.replace('_', "").parse::<u32>() {
        Ok(0) => Err("must be at least 1"),
        Ok(count) => Ok(count),
        Err(_) => Err("must be a whole number"),
    }
}

/// The `carmy_core::RateLimit` constructor, under the runtime's `__private` module `private`.
pub(crate) fn constructor(limit: RateLimit, private: &TokenStream) -> TokenStream {
    match limit {
        RateLimit::Unlimited => quote!(#private::RateLimit::unlimited()),
        RateLimit::Bucket {
            requests,
            per,
            burst,
        } => {
            let per = match per {
                Per::Second => quote!(per_second),
                Per::Minute => quote!(per_minute),
                Per::Hour => quote!(per_hour),
            };
            let burst = burst.map(|burst| quote!(.burst(#burst)));
            quote!(#private::RateLimit::#per(#requests) #burst)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(value: &str) -> syn::Result<RateLimit> {
        parse(&LitStr::new(value, proc_macro2::Span::call_site()))
    }

    fn error(value: &str) -> String {
        parse_str(value).unwrap_err().to_string()
    }

    #[test]
    fn rates_with_and_without_a_burst() {
        assert_eq!(
            parse_str("30/min").unwrap(),
            RateLimit::Bucket {
                requests: 30,
                per: Per::Minute,
                burst: None
            }
        );
        assert_eq!(
            parse_str(" 5 / s , burst 10 ").unwrap(),
            RateLimit::Bucket {
                requests: 5,
                per: Per::Second,
                burst: Some(10)
            }
        );
        assert_eq!(
            parse_str("1_000/hour").unwrap(),
            RateLimit::Bucket {
                requests: 1000,
                per: Per::Hour,
                burst: None
            }
        );
        assert_eq!(parse_str("unlimited").unwrap(), RateLimit::Unlimited);
    }

    #[test]
    fn mistakes_say_what_is_wrong() {
        assert!(error("30").contains("no `/`"), "{}", error("30"));
        assert!(error("0/min").contains("the requests must be at least 1"));
        assert!(error("x/min").contains("the requests must be a whole number"));
        assert!(error("3/day").contains("unknown unit `day` (s, min or h)"));
        assert!(error("3/min, 5").contains("after the comma comes `burst N`"));
        assert!(error("3/min, burst 0").contains("the burst must be at least 1"));
    }

    #[test]
    fn the_constructor_is_the_core_s() {
        let private = quote!(__carmy);
        let limit = parse_str("30/min, burst 5").unwrap();
        assert_eq!(
            constructor(limit, &private).to_string(),
            quote!(__carmy::RateLimit::per_minute(30u32).burst(5u32)).to_string()
        );
    }
}
