//! Compile-time behaviour of `#[tool]`: odd-but-legal code compiles (and runs), and each
//! mistake gives one diagnostic pointing at the offending tokens. Regenerate the `.stderr`
//! files with `TRYBUILD=overwrite cargo test -p carmy --test ui`, then read every one.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
