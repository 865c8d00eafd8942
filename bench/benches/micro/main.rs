//! Microbenchmarks of Carmy's runtime (divan): what the pipeline costs per call, argument
//! validation, `tools/list` for a catalog of 1,000 tools, idempotency-store lookups under
//! contention, and rate-limit checks.
//!
//! ```text
//! cargo bench -p carmy-bench --bench micro            # everything
//! cargo bench -p carmy-bench --bench micro -- dispatch # one group
//! ```

mod dispatch;
mod idempotency;
mod many_tools;
mod rate_limit;
mod tools;
mod tools_list;
mod validation;

fn main() {
    divan::main();
}
