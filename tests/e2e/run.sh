#!/usr/bin/env bash
# End-to-end tests: the shop example served over MCP stdio (`shop mcp`), driven by the official
# Python and TypeScript MCP clients. See tests/e2e/README.md.
#
#   tests/e2e/run.sh                 # set up, build, run both clients' suites
#   tests/e2e/run.sh python [ARGS]   # only the Python client; ARGS go to pytest (e.g. -k legacy)
#   tests/e2e/run.sh ts [FILES]      # only the TypeScript clients; FILES default to *.test.mjs
#   tests/e2e/run.sh carmy [FILTER]  # only `carmy client` against servers written with the Python
#                                    # and TypeScript SDKs (the sdk_servers tests of carmy-client;
#                                    # FILTER narrows them, e.g. `python`)
#
# Set-up is idempotent: the venv (tests/e2e/.venv) is rebuilt when python/requirements.txt
# changes, node_modules when ts/package-lock.json changes. SHOP_BIN=/path/to/shop skips the
# cargo build. Exits non-zero if any suite fails; the last line sums up every suite.
set -euo pipefail

E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$E2E/../.." && pwd)"
WHICH="${1:-all}"
if [[ $# -gt 0 ]]; then shift; fi
case "$WHICH" in
  all | python | ts | carmy) ;;
  *) echo "usage: $0 [all|python|ts|carmy] [runner args...]" >&2; exit 2 ;;
esac
if [[ "$WHICH" == all && $# -gt 0 ]]; then
  echo "runner arguments need a single suite: $0 python|ts|carmy ARGS" >&2
  exit 2
fi

say() { printf '==> %s\n' "$*"; }
fingerprint() { sha256sum "$1" | cut -d' ' -f1; }

# --- Python client: a venv with the pinned requirements -------------------------------------
setup_python() {
  local venv="$E2E/.venv" requirements="$E2E/python/requirements.txt"
  local stamp="$venv/.requirements.sha256" want
  want="$(fingerprint "$requirements")"
  if [[ -x "$venv/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
    return
  fi
  say "python: installing $(grep -cv '^\s*\(#\|$\)' "$requirements") pinned packages into tests/e2e/.venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$requirements"
  echo "$want" >"$stamp"
}

# --- TypeScript clients: npm ci from the committed lock file ----------------------------------
setup_ts() {
  local stamp="$E2E/ts/node_modules/.e2e-lock.sha256" want
  want="$(fingerprint "$E2E/ts/package-lock.json")"
  if [[ "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
    return
  fi
  say "ts: npm ci"
  (cd "$E2E/ts" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
}

# --- The server --------------------------------------------------------------------------------
setup_shop() {
  if [[ -z "${SHOP_BIN:-}" ]]; then
    say "cargo build --release -p shop"
    (cd "$ROOT" && cargo build --release -p shop)
    SHOP_BIN="$ROOT/target/release/shop"
  fi
  if [[ ! -x "$SHOP_BIN" ]]; then
    echo "error: SHOP_BIN=$SHOP_BIN is not an executable" >&2
    exit 2
  fi
  # The suites run from their own directories: a relative path would point elsewhere there.
  SHOP_BIN="$(realpath "$SHOP_BIN")"
  export SHOP_BIN
  # A server that cannot serve MCP at all fails every test the same way: say it once, clearly.
  # The probe keeps its default store in a throwaway data directory, not the user's.
  local probe data
  data="$(mktemp -d)"
  if ! probe="$(XDG_DATA_HOME="$data" timeout 20 "$SHOP_BIN" mcp </dev/null 2>&1 >/dev/null)"; then
    rm -rf "$data"
    echo "error: \`$SHOP_BIN mcp\` does not serve MCP: ${probe:-no output}" >&2
    exit 2
  fi
  rm -rf "$data"
}

if [[ "$WHICH" != ts ]]; then setup_python; fi
if [[ "$WHICH" != python ]]; then setup_ts; fi
# The carmy suite starts its own servers (written with the SDKs): it needs no shop build.
if [[ "$WHICH" != carmy ]]; then
  setup_shop
  say "server: $SHOP_BIN"
fi

started=$SECONDS
passed=0 failed=0 skipped=0 status=0
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
count() { grep -oE "[0-9]+ $1" <<<"$2" | head -1 | cut -d' ' -f1 || true; }

if [[ "$WHICH" == all || "$WHICH" == python ]]; then
  say "python: pytest (mcp $(grep -oE '^mcp==\S+' "$E2E/python/requirements.txt" | cut -d= -f3); modes auto and legacy)"
  set +e
  (cd "$E2E/python" && timeout 600 "$E2E/.venv/bin/python" -m pytest -q -rs "$@") | tee "$out/pytest.log"
  code=${PIPESTATUS[0]}
  set -e
  summary="$(tail -n 1 "$out/pytest.log")"
  p=$(count passed "$summary") f=$(count failed "$summary") e=$(count error "$summary") s=$(count skipped "$summary")
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0} + ${e:-0})) skipped=$((skipped + ${s:-0}))
  if [[ $code -ne 0 ]]; then
    status=1
    # No test ran, or pytest itself failed: count it as a failure.
    if [[ -z "$f$e" ]]; then failed=$((failed + 1)); fi
  fi
fi

if [[ "$WHICH" == all || "$WHICH" == ts ]]; then
  say "ts: node --test (@modelcontextprotocol/sdk v1 and @modelcontextprotocol/client v2)"
  set +e
  (
    cd "$E2E/ts"
    if [[ $# -eq 0 ]]; then set -- *.test.mjs; fi
    timeout 600 node --test --test-reporter=spec --test-reporter-destination=stdout \
      --test-reporter=tap --test-reporter-destination="$out/node.tap" "$@"
  )
  code=$?
  set -e
  tap="$(cat "$out/node.tap" 2>/dev/null || true)"
  p=$(grep -oE '^# pass [0-9]+' <<<"$tap" | tail -1 | cut -d' ' -f3 || true)
  f=$(grep -oE '^# fail [0-9]+' <<<"$tap" | tail -1 | cut -d' ' -f3 || true)
  s=$(grep -oE '^# skipped [0-9]+' <<<"$tap" | tail -1 | cut -d' ' -f3 || true)
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
  if [[ $code -ne 0 ]]; then
    status=1
    if [[ -z "$p" || "${f:-0}" -eq 0 ]]; then failed=$((failed + 1)); fi
  fi
fi

if [[ "$WHICH" == all || "$WHICH" == carmy ]]; then
  # The SDKs are installed now: a test that cannot find one fails rather than skips.
  say "carmy: the client CLI against servers written with the Python and TypeScript SDKs"
  set +e
  (cd "$ROOT" && CARMY_SDK_SERVERS=required timeout 900 cargo test -p carmy-client --test integration -- "sdk_servers::${1:-}") \
    | tee "$out/carmy.log"
  code=${PIPESTATUS[0]}
  set -e
  summary="$(grep -E '^test result:' "$out/carmy.log" | tail -n 1 || true)"
  p=$(count passed "$summary") f=$(count failed "$summary")
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
  if [[ $code -ne 0 ]]; then
    status=1
    if [[ -z "$f" || "$f" -eq 0 ]]; then failed=$((failed + 1)); fi
  fi
fi

say "e2e took $((SECONDS - started)) s"
echo "e2e: $passed passed, $failed failed, $skipped skipped"
exit $status
