//! Argument validation against the published input schema (what rmcp does not do), next to
//! the serde decode that every contender does anyway.

use carmy_bench::catalog::SearchInput;
use divan::{Bencher, black_box};
use serde_json::json;

use crate::tools;

/// Decoding alone, no schema: the rmcp contenders' only check.
#[divan::bench]
fn serde_decode_only(bencher: Bencher<'_, '_>) {
    let arguments = json!({ "query": "mouse", "limit": 5, "category": "peripherals" });
    bencher.bench_local(|| serde_json::from_value::<SearchInput>(black_box(arguments.clone())));
}

/// Carmy's validation of valid arguments (depth check, optional-null cleanup, JSON Schema).
#[divan::bench]
fn validate_valid(bencher: Bencher<'_, '_>) {
    let runtime = tools::runtime();
    let entry = runtime.catalog().get("search_products").unwrap();
    let depth = runtime.limits().max_argument_depth;
    let arguments = json!({ "query": "mouse", "limit": 5, "category": "peripherals" });
    bencher.bench_local(|| {
        entry
            .validate_arguments(black_box(arguments.clone()), depth)
            .unwrap()
    });
}

/// Carmy's validation of invalid arguments: the error path, which collects every problem
/// with its JSON pointer for the model.
#[divan::bench]
fn validate_invalid(bencher: Bencher<'_, '_>) {
    let runtime = tools::runtime();
    let entry = runtime.catalog().get("search_products").unwrap();
    let depth = runtime.limits().max_argument_depth;
    let arguments = json!({ "query": 5, "limit": 500, "category": "garden" });
    bencher.bench_local(|| {
        entry
            .validate_arguments(black_box(arguments.clone()), depth)
            .unwrap_err()
    });
}
