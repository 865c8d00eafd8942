#!/usr/bin/env bash
# Two builds of the store benchmark's server on one Redis, alternated: calls/s, Redis's CPU and
# commands per call for each, so that a change to the store's scripts is measured against the
# code before it under the same machine's mood (this VM's speed moves by 2x across a day).
#
#   bench/redis-ab.sh OLD NEW                     # `touch`, 4 rounds of 5 s each, 32 clients
#   bench/redis-ab.sh OLD NEW --tool note --rounds 3
#
# OLD and NEW are `bench-store-server` binaries; to build one of another commit:
#
#   git worktree add /tmp/carmy-old <commit>
#   cargo build --release -p carmy-bench --bin bench-store-server \
#     --manifest-path /tmp/carmy-old/Cargo.toml --target-dir /tmp/carmy-old-target
#
# Redis runs as in bench/stores.sh (`appendonly yes`, `appendfsync always`), emptied before each
# case; each case gets a 1 s warm-up, then `http_load` with a fresh request id per call.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[[ $# -ge 2 ]] || {
  echo "usage: $0 OLD NEW [--tool touch|note|note_serial] [--rounds N] [--seconds N] [--clients N]" >&2
  exit 2
}
old="$(realpath "$1")"
new="$(realpath "$2")"
shift 2
tool=touch
rounds=4
seconds=5
clients=32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tool) tool="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
source bench/lib.sh
bash scripts/services.sh >&2
cargo build --release --quiet -p carmy-mcp --example http_load
load="${CARGO_TARGET_DIR:-target}/release/examples/http_load"

scratch="$(mktemp -d /tmp/carmy-redis-ab-XXXXXX)"
port="$(free_port)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
start_redis "$port" "$scratch"
store_tokens "$clients"
# start_store_server runs "$bin/bench-store-server": each build gets a directory of its own.
for build in old new; do
  mkdir "$scratch/$build"
  ln -s "${!build}" "$scratch/$build/bench-store-server"
done

echo "| round | build | calls/s | Redis CPU µs/call | commands/call |"
echo "|--:|---|--:|--:|--:|"
for round in $(seq "$rounds"); do
  for build in old new; do
    bin="$scratch/$build"
    redis-cli -p "$port" FLUSHALL >/dev/null
    : >"$scratch/tokens"
    start_store_server "redis://127.0.0.1:$port/0" "$clients"
    "$load" --url "$url" "${token_flags[@]}" --clients "$clients" --seconds 1 --tool "$tool" \
      --arguments '{"text":"x"}' --request-ids >/dev/null
    redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
    before="$(cpu_ticks "$redis_pid")"
    line="$("$load" --url "$url" "${token_flags[@]}" --clients "$clients" \
      --seconds "$seconds" --tool "$tool" --arguments '{"text":"x"}' --request-ids | head -1)"
    after="$(cpu_ticks "$redis_pid")"
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    calls="$(load_field "$line" calls)"
    commands="$(redis-cli -p "$port" INFO commandstats | grep '^cmdstat_' \
      | grep -v -e '^cmdstat_evalsha:' -e '^cmdstat_config' -e '^cmdstat_info' \
      | sed 's/.*:calls=\([0-9]*\),.*/\1/' | paste -sd+ | bc)"
    echo "| $round | $build | $(load_field "$line" throughput) | $(per_call_us "$before" "$after" "$calls") | $(echo "scale=1; $commands / $calls" | bc) |"
  done
done
