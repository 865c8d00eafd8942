//! `timeout = "30s"`: a humantime duration, parsed at compile time.

use std::time::Duration;

use syn::LitStr;

/// The duration in `lit`; zero and unparsable values are errors on the literal.
pub(crate) fn parse(lit: &LitStr) -> syn::Result<Duration> {
    let value = lit.value();
    match humantime::parse_duration(&value) {
        Ok(duration) if duration.is_zero() => Err(syn::Error::new(
            lit.span(),
            "the timeout must be greater than zero; remove `timeout` to use the runtime's default",
        )),
        Ok(duration) => Ok(duration),
        Err(error) => {
            // humantime's positional errors ("expected number at 0") say less than the example.
            let detail = match error {
                humantime::DurationError::UnknownUnit { .. }
                | humantime::DurationError::NumberOverflow => format!(": {error}"),
                _ => String::new(),
            };
            Err(syn::Error::new(
                lit.span(),
                format!(
                    "invalid timeout `{value}`{detail}; expected a duration like \"500ms\", \"30s\" or \"2m\""
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(value: &str) -> syn::Result<Duration> {
        parse(&LitStr::new(value, proc_macro2::Span::call_site()))
    }

    #[test]
    fn humantime_durations() {
        assert_eq!(parse_str("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_str("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_str("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_str("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_str("250us").unwrap(), Duration::from_micros(250));
    }

    #[test]
    fn a_missing_unit_is_explained() {
        let error = parse_str("30").unwrap_err().to_string();
        assert!(
            error.starts_with("invalid timeout `30`: time unit needed"),
            "{error}"
        );
        let error = parse_str("soon").unwrap_err().to_string();
        assert!(
            error.starts_with("invalid timeout `soon`; expected a duration"),
            "{error}"
        );
    }

    #[test]
    fn zero_and_garbage_are_rejected() {
        let zero = parse_str("0s").unwrap_err().to_string();
        assert!(
            zero.starts_with("the timeout must be greater than zero"),
            "{zero}"
        );
        for bad in ["", "30", "thirty seconds", "30 parsecs", "-1s"] {
            let error = parse_str(bad).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("invalid timeout `{bad}`")),
                "{error}"
            );
            assert!(error.ends_with(r#"expected a duration like "500ms", "30s" or "2m""#));
        }
    }
}
