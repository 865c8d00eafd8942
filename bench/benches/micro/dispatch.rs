//! What the runtime's pipeline (resolve → validate → decode → policy → permits → run under
//! deadline → output check → record) costs over calling the tool function directly.

use carmy_bench::catalog::{self, SearchInput};
use carmy_core::{Request, Runtime};
use divan::{Bencher, black_box};
use serde_json::Value;

use crate::tools::{self, Ack, mouse};

/// The floor: decode the JSON arguments, call the function, encode the result. This is what
/// the hand-written rmcp contender does per call.
#[divan::bench]
fn direct_search(bencher: Bencher<'_, '_>) {
    let arguments = mouse();
    bencher.bench_local(|| {
        let input: SearchInput = serde_json::from_value(black_box(arguments.clone())).unwrap();
        serde_json::to_value(catalog::search(&input)).unwrap()
    });
}

/// The same call through `Runtime::execute`, on a current-thread tokio runtime.
#[divan::bench]
fn runtime_search(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let runtime = tools::runtime();
    let arguments = mouse();
    bencher.bench_local(|| {
        let outcome = host.block_on(runtime.call("search_products", black_box(arguments.clone())));
        outcome.result.unwrap()
    });
}

/// Through the runtime with a request id, every id new. A read claims none (only writes do), so
/// this costs what `runtime_search` does; a write's claim is `idempotency::claim_and_finish`.
#[divan::bench]
fn runtime_search_with_request_id(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let runtime = tools::runtime();
    let arguments = mouse();
    let mut n = 0u64;
    bencher.bench_local(|| {
        n += 1;
        let request = Request::new("search_products", black_box(arguments.clone()))
            .request_id(format!("req-{n}"));
        host.block_on(runtime.execute(request)).result.unwrap()
    });
}

/// The pipeline's fixed cost: a tool with no input that returns `{"ok": true}`, directly...
#[divan::bench]
fn direct_noop(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    bencher.bench_local(|| {
        host.block_on(async { serde_json::to_value(black_box(Ack { ok: true })).unwrap() })
    });
}

/// ...and through the runtime.
#[divan::bench]
fn runtime_noop(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let runtime: Runtime = tools::runtime();
    bencher.bench_local(|| {
        host.block_on(runtime.call("noop", Value::Null))
            .result
            .unwrap()
    });
}
