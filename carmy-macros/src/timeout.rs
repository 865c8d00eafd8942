//! `timeout = "30s"` and `task_after = "500ms"`: humantime durations, parsed at compile time.

use std::time::Duration;

use syn::LitStr;

/// The timeout in `lit`; zero and unparsable values are errors on the literal.
pub(crate) fn parse(lit: &LitStr) -> syn::Result<Duration> {
    duration(
        lit,
        "timeout",
        "the timeout must be greater than zero; remove `timeout` to use the runtime's default",
    )
}

/// The `task_after` in `lit`; zero and unparsable values are errors on the literal.
pub(crate) fn parse_task_after(lit: &LitStr) -> syn::Result<Duration> {
    duration(
        lit,
        "task_after",
        "`task_after` must be greater than zero; remove it for a call that is a task from the \
         moment its tool starts",
    )
}

/// The duration in `lit`, named `what` in errors; `zero` is the error for a zero duration.
fn duration(lit: &LitStr, what: &str, zero: &str) -> syn::Result<Duration> {
    let value = lit.value();
    match humantime::parse_duration(&value) {
        Ok(duration) if duration.is_zero() => Err(syn::Error::new(lit.span(), zero)),
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
                    "invalid {what} `{value}`{detail}; expected a duration like \"500ms\", \"30s\" or \"2m\""
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
    fn task_after_speaks_of_itself() {
        let lit = |value| LitStr::new(value, proc_macro2::Span::call_site());
        assert_eq!(
            parse_task_after(&lit("250ms")).unwrap(),
            Duration::from_millis(250)
        );
        let zero = parse_task_after(&lit("0ms")).unwrap_err().to_string();
        assert!(
            zero.starts_with("`task_after` must be greater than zero"),
            "{zero}"
        );
        let soon = parse_task_after(&lit("soon")).unwrap_err().to_string();
        assert!(soon.starts_with("invalid task_after `soon`"), "{soon}");
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
