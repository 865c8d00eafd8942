//! `uri = "shop://products/{id}"`: an RFC 6570 level-1 URI template, or a fixed URI.
//!
//! The runtime parses the template again at `build()` (`carmy_core::UriTemplate::parse`); a
//! proc macro cannot call it, so its rules are written out here to move the mistake to compile
//! time: `{name}` variables of letters, digits and `_`, no operators (`{+path}`, `{?q}`), no two
//! variables side by side, none twice, braces that pair. The reasons are worded as the runtime
//! words them, and a test reads a table of templates with both parsers and expects the same
//! verdicts, so the two cannot drift apart unnoticed.

/// The variables of `template`, in order (none for a fixed URI), or why it is not a template.
pub(crate) fn variables(template: &str) -> Result<Vec<&str>, String> {
    let mut variables: Vec<&str> = Vec::new();
    // Whether the last part was a variable: two in a row could not be told apart.
    let mut after_variable = false;
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => break,
            Some(at) if rest.as_bytes()[at] == b'}' => {
                return Err("a `}` that closes nothing".into());
            }
            Some(at) => {
                if at > 0 {
                    after_variable = false;
                }
                let Some(end) = rest[at..].find('}') else {
                    return Err("a `{` that is never closed".into());
                };
                let name = &rest[at + 1..at + end];
                check_name(name)?;
                if after_variable {
                    return Err(format!(
                        "`{{{name}}}` follows another variable directly: put a literal between \
                         them, or they cannot be told apart"
                    ));
                }
                if variables.contains(&name) {
                    return Err(format!("`{{{name}}}` appears twice"));
                }
                variables.push(name);
                after_variable = true;
                rest = &rest[at + end + 1..];
            }
        }
    }
    Ok(variables)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Templates both parsers must judge alike: carmy-core's own cases, and the edges of each
    /// rule.
    const CASES: &[&str] = &[
        // Fixed URIs.
        "shop://policies/returns",
        "",
        "file:///tmp/a%20b.txt",
        "no scheme at all",
        // Level 1.
        "shop://products/{id}",
        "shop://orders/{order}/lines/{line}.json",
        "{whole}",
        "{a}/{b}",
        "shop://{A_1}x{b2}",
        "shop://products/{id}?format=json",
        // Refused: operators, adjacency, repetition, braces, names.
        "shop://{+path}",
        "shop://search{?q}",
        "shop://{#frag}",
        "shop://{.ext}",
        "shop://{/seg}",
        "shop://{;p}",
        "shop://{&q}",
        "shop://{=x}",
        "shop://{,x}",
        "shop://{!x}",
        "shop://{@x}",
        "shop://{|x}",
        "shop://{a}{b}",
        "shop://{a}/{a}",
        "shop://{a}/{b}/{a}",
        "shop://{a",
        "shop://{a}{",
        "shop://a}",
        "shop://}{a}",
        "shop://{}",
        "shop://{a-b}",
        "shop://{a b}",
        "shop://{a:3}",
        "shop://{a*}",
        "shop://{a,b}",
        "shop://{é}",
        "shop://{{a}}",
        "shop://{a{b}",
    ];

    #[test]
    fn agrees_with_the_runtime() {
        for &case in CASES {
            let ours = variables(case)
                .map(|variables| variables.join(","))
                .map_err(|reason| format!("invalid URI template `{case}`: {reason}"));
            let runtime = carmy::resources::UriTemplate::parse(case)
                .map(|template| template.variables().collect::<Vec<_>>().join(","))
                .map_err(|error| error.to_string());
            assert_eq!(ours, runtime, "{case:?}");
        }
    }

    #[test]
    fn variables_come_in_order() {
        assert_eq!(variables("shop://policies/returns"), Ok(vec![]));
        assert_eq!(
            variables("shop://orders/{order}/lines/{line}.json"),
            Ok(vec!["order", "line"])
        );
    }

    #[test]
    fn refusals_say_why() {
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
            let error = variables(source).unwrap_err();
            assert!(error.contains(reason), "{source}: {error}");
        }
    }
}
