//! The README shows this crate as it is: its `main.rs` whole, and its dependency lines.

const README: &str = include_str!("../../../README.md");

#[test]
fn the_readme_shows_this_main_rs() {
    let main = include_str!("../src/main.rs");
    assert!(
        README.contains(&format!("```rust,no_run\n{main}```")),
        "README.md's sample of `main` differs from examples/minimal/src/main.rs"
    );
}

#[test]
fn the_readme_shows_these_dependency_lines() {
    let manifest = include_str!("../Cargo.toml");
    for line in [
        "schemars = \"1\"",
        "serde = { version = \"1\", features = [\"derive\"] }",
    ] {
        assert!(manifest.contains(line), "Cargo.toml lost {line}");
        assert!(README.contains(line), "README.md lost {line}");
    }
}
