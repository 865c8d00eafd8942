#!/usr/bin/env bash
# Every test Carmy has: unit, doc, compile-fail (trybuild) and integration tests through
# `cargo test`, then the end-to-end suites that drive the shop server with the official Python
# and TypeScript MCP clients (installed, pinned, on first use), and the official MCP conformance
# suite against the everything server (examples/everything), for both protocol revisions.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo test --workspace"
cargo test --workspace

echo "==> end-to-end tests with real MCP clients"
bash tests/e2e/run.sh

echo "==> the official MCP conformance suite against examples/everything, both revisions"
bash tests/conformance/run.sh
