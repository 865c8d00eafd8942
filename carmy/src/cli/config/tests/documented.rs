//! Every setting is a documented key, and the guide shows them all.

use crate::cli::config::*;

#[test]
fn every_setting_is_a_documented_key_and_readme_shows_them_all() {
    // Each leaf of the settings is in KEYS, and each key of KEYS is a leaf.
    fn leaves(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
        match value.as_object() {
            Some(fields) => {
                for (name, value) in fields {
                    let key = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    leaves(&key, value, out);
                }
            }
            None => out.push(prefix.to_owned()),
        }
    }
    let mut found = Vec::new();
    leaves(
        "",
        &serde_json::to_value(Settings::default()).unwrap(),
        &mut found,
    );
    found.sort();
    let mut documented: Vec<String> = keys::KEYS.iter().map(|key| key.path.to_owned()).collect();
    documented.sort();
    assert_eq!(found, documented);

    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/06-configuration.md"
    ))
    .expect("docs/06-configuration.md");
    assert!(
        readme.contains(&reference()),
        "docs/06-configuration.md's reference differs from `config --keys`:\n{}",
        reference()
    );
}
