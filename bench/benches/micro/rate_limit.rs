//! What rate limits cost: one check of a principal's bucket (governor's keyed state behind
//! `RateBuckets`), from 1, 2 and 4 threads, for one hot key and for 10,000 principals; and a
//! call through the runtime with a per-tool limit set, to set beside `dispatch::runtime_search`.
//! The limits are far above what the benchmark sends, so every check admits.

use std::sync::atomic::{AtomicU64, Ordering};

use carmy_core::{Carmy, RateBuckets, RateLimit};
use divan::{Bencher, black_box};

use crate::tools::{self, Search};

/// High enough that no check here is ever refused.
const GENEROUS: RateLimit = RateLimit::per_second(1_000_000_000).burst(1_000_000_000);

/// Principals of the many-keys benchmark.
const PRINCIPALS: u64 = 10_000;

/// Every check on one key (one principal calling one tool as fast as it can).
#[divan::bench(threads = [1, 2, 4])]
fn check_one_key(bencher: Bencher<'_, '_>) {
    let buckets = RateBuckets::new(GENEROUS).expect("limited");
    let key = String::from("alice");
    bencher.bench(|| buckets.check(black_box(&key)).expect("admitted"));
}

/// Checks spread over 10,000 principals' buckets.
#[divan::bench(threads = [1, 2, 4])]
fn check_many_keys(bencher: Bencher<'_, '_>) {
    let buckets = RateBuckets::new(GENEROUS).expect("limited");
    let keys: Vec<String> = (0..PRINCIPALS).map(|n| format!("principal-{n}")).collect();
    let next = AtomicU64::new(0);
    bencher.bench(|| {
        let n = next.fetch_add(1, Ordering::Relaxed) % PRINCIPALS;
        buckets
            .check(black_box(&keys[n as usize]))
            .expect("admitted")
    });
}

/// `dispatch::runtime_search` with a rate limit on every tool: the limit's cost per call.
#[divan::bench]
fn runtime_search_rate_limited(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let runtime = Carmy::new()
        .tool(Search)
        .rate_limit(GENEROUS)
        .build()
        .expect("the benchmark catalog builds");
    let arguments = tools::mouse();
    bencher.bench_local(|| {
        let outcome = host.block_on(runtime.call("search_products", black_box(arguments.clone())));
        outcome.result.unwrap()
    });
}
