#!/usr/bin/env bash
# Every test Carmy has: unit, doc, compile-fail (trybuild) and integration tests through
# `cargo test`, then the end-to-end suites that drive the shop server with the official Python
# and TypeScript MCP clients (installed, pinned, on first use), and the official MCP conformance
# suite against the everything server (examples/everything), for both protocol revisions.
# The store tests run real PostgreSQL and Redis servers: installed here (scripts/services.sh),
# started by the tests themselves, and required, so a missing one fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh
export CARMY_TEST_SERVERS=required

echo "==> cargo test --workspace (at ${SECONDS} s)"
cargo test --workspace

# Both servers the suites below drive, in one release build: their dependencies are compiled
# once and the two (fat-LTO) links run side by side.
echo "==> cargo build --release -p shop -p everything (at ${SECONDS} s)"
cargo build --release -p shop -p everything
export SHOP_BIN="$PWD/target/release/shop" EVERYTHING_BIN="$PWD/target/release/everything"

echo "==> end-to-end tests with real MCP clients (at ${SECONDS} s)"
bash tests/e2e/run.sh

echo "==> the official MCP conformance suite against examples/everything, both revisions (at ${SECONDS} s)"
bash tests/conformance/run.sh
echo "==> every test passed (at ${SECONDS} s)"
