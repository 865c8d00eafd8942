//! The idempotency fingerprint over arbitrary tool names and JSON. Input: `name 0xFF json-a
//! [0xFF json-b]`. Properties: the fingerprint survives re-serialization, pretty-printing and
//! key reordering; equal calls fingerprint equal and unequal ones differ; the tool name never
//! bleeds into the arguments.
#![no_main]

use carmy_core::Fingerprint;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut out = Map::new();
            for (key, member) in members.iter().rev() {
                out.insert(key.clone(), reversed(member));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        scalar => scalar.clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |byte| *byte == 0xff);
    let (Some(name), Some(a)) = (parts.next(), parts.next()) else {
        return;
    };
    let Ok(name) = std::str::from_utf8(name) else {
        return;
    };
    let Ok(a) = serde_json::from_slice::<Value>(a) else {
        return;
    };
    let fa = Fingerprint::of(name, &a);
    let compact: Value = serde_json::from_str(&a.to_string()).expect("re-parse");
    assert_eq!(
        Fingerprint::of(name, &compact),
        fa,
        "changed by re-serialization: {a}"
    );
    let pretty: Value =
        serde_json::from_str(&serde_json::to_string_pretty(&a).unwrap()).expect("re-parse");
    assert_eq!(
        Fingerprint::of(name, &pretty),
        fa,
        "changed by pretty-printing: {a}"
    );
    assert_eq!(
        Fingerprint::of(name, &reversed(&a)),
        fa,
        "changed by key order: {a}"
    );
    let longer = format!("{name}x");
    assert_ne!(Fingerprint::of(&longer, &a), fa, "tool name ignored");
    if let Some(b) = parts.next()
        && let Ok(b) = serde_json::from_slice::<Value>(b)
    {
        let fb = Fingerprint::of(name, &b);
        if a == b {
            assert_eq!(fa, fb, "equal arguments, different fingerprints: {a} / {b}");
        } else {
            assert_ne!(fa, fb, "different arguments, one fingerprint: {a} / {b}");
        }
    }
});
