#!/usr/bin/env bash
# The streamable HTTP benchmark: the same tool (`search_products {"query":"mouse"}`, 4 products)
# served over streamable HTTP by Carmy's shop, by the hand-written rmcp handler behind rmcp's
# own `StreamableHttpService`, and by the official TypeScript SDK on node:http; each stateless
# (every request stands alone, answered with JSON) and with sessions (`initialize` first, each
# answer on an event stream). 64 clients, each on its own keep-alive connection, call back to
# back; calls per second, latency, and the server's CPU per call.
#
#   bench/http.sh                     # 3 interleaved runs of 10 s per contender (~5 min)
#   bench/http.sh --runs 1 --seconds 3 --clients 16
#
# Builds the servers and the driver (carmy-mcp's `http_load` example) in release, installs the
# TypeScript SDK (bench/setup.sh; skipped with a note when it cannot), and writes
# bench/results/<date>-http.md with the machine it ran on.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
runs=3
seconds=10
clients=64
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--seconds N] [--clients N]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
source bench/lib.sh
say() { echo "http.sh: $*" >&2; }
say "building the servers and the load driver (release)"
# One invocation: the packages' features resolve once, so the driver adds no dependency build.
cargo build --release --quiet -p carmy-bench -p shop -p carmy-mcp --bin shop --bin bench-rmcp-http \
  --example http_load
bin="${CARGO_TARGET_DIR:-target}/release"
load="$bin/examples/http_load"

notes=()
contenders=(
  "carmy-shop|stateless|$bin/shop http --stateless --addr 127.0.0.1:0 --store memory"
  "carmy-shop|sessions|$bin/shop http --addr 127.0.0.1:0 --store memory --max-sessions-per-principal $((clients * 2))"
  "rmcp-http|stateless|$bin/bench-rmcp-http --stateless"
  "rmcp-http|sessions|$bin/bench-rmcp-http"
)
bench/setup.sh >&2 || notes+=("bench/setup.sh did not finish cleanly; missing contenders are skipped")
if command -v node >/dev/null && [[ -d bench/node_modules/@modelcontextprotocol/sdk ]]; then
  contenders+=(
    "ts-sdk-http|stateless|node bench/servers/node_http_server.mjs --stateless"
    "ts-sdk-http|sessions|node bench/servers/node_http_server.mjs"
  )
else
  notes+=("ts-sdk-http skipped: node or npm \`@modelcontextprotocol/sdk\` is missing")
fi

scratch="$(mktemp -d /tmp/carmy-http-XXXXXX)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

ticks="$(getconf CLK_TCK)"

# One run of one contender: prints "calls/s p50 p99 cpu_us_per_call errors".
run_one() {
  local command="$1" mode="$2" log="$scratch/server.log" url
  # shellcheck disable=SC2086 # the command is split on purpose
  $command >"$log" 2>&1 &
  server_pid=$!
  url="$(wait_for_url "$log" "$server_pid")" || exit 1
  local session_flag=()
  [[ "$mode" == sessions ]] && session_flag=(--sessions)
  local args=(--url "$url" --clients "$clients" --tool search_products
    --arguments '{"query":"mouse"}' --expect-total 4 "${session_flag[@]}")
  # A short warm-up, not measured: connections, sessions, the allocator, the JIT.
  "$load" "${args[@]}" --seconds 1 >/dev/null
  local before after output line
  before="$(cpu_ticks "$server_pid")"
  output="$("$load" "${args[@]}" --seconds "$seconds")"
  after="$(cpu_ticks "$server_pid")"
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  line="${output%%$'\n'*}"
  [[ "$output" == *$'\n'* ]] && say "${output#*$'\n'}"
  local calls errors throughput p50 p99
  calls="$(load_field "$line" calls)"
  errors="$(load_field "$line" errors)"
  throughput="$(load_field "$line" throughput)"
  p50="$(load_field "$line" p50)"
  p99="$(load_field "$line" p99)"
  local cpu
  cpu="$(python3 -c "print(f'{($after-$before)/$ticks/max($calls,1)*1e6:.1f}')")"
  echo "$throughput $p50 $p99 $cpu $errors"
}

declare -A results
for run in $(seq "$runs"); do
  for contender in "${contenders[@]}"; do
    IFS='|' read -r name mode command <<<"$contender"
    figures="$(run_one "$command" "$mode")"
    say "run $run/$runs $name ($mode): $figures"
    results["$name|$mode"]+="$figures;"
  done
done

results_file="bench/results/$(date +%F)-http.md"
{
  echo "# Streamable HTTP: $(date +%F)"
  echo
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/ {print $2}') GiB;"
  echo "$(uname -sr); $(rustc --version); Node $(node --version 2>/dev/null || echo none)."
  echo "Load average before the run: $(cut -d' ' -f1-3 /proc/loadavg). The driver and the server share the machine."
  echo
  echo "Command: \`bench/http.sh --runs $runs --seconds $seconds --clients $clients\` ($clients clients, each on its own keep-alive HTTP/1.1 connection, calling \`search_products {\"query\":\"mouse\"}\` back to back; a call counts when its \`structuredContent.total\` is 4; $seconds s per run after a 1 s warm-up; runs interleaved, the median of each figure)."
  echo
  echo "| server | mode | calls/s | p50 ms | p99 ms | server CPU µs/call | errors |"
  echo "|---|---|--:|--:|--:|--:|--:|"
  for contender in "${contenders[@]}"; do
    IFS='|' read -r name mode _ <<<"$contender"
    python3 - "$name" "$mode" "${results["$name|$mode"]}" <<'PY'
import statistics, sys
name, mode, raw = sys.argv[1:]
runs = [r.split() for r in raw.strip(";").split(";")]
def median(i, fmt):
    return fmt.format(statistics.median(float(r[i]) for r in runs))
errors = sum(int(r[4]) for r in runs)
print(f"| {name} | {mode} | {median(0, '{:,.0f}')} | {median(1, '{:.2f}')} | {median(2, '{:.2f}')} | {median(3, '{:.1f}')} | {errors} |")
PY
  done
  echo
  echo "carmy-shop is \`shop http\` with every guarantee on (validation in and out, policy, history, deadlines, the HTTP guard: Host and Origin checks, body limits, rate limits off) and its in-memory idempotency store; rmcp-http the hand-written rmcp handler (bench/src/rmcp_handler.rs) behind \`StreamableHttpService\` with rmcp's defaults; ts-sdk-http npm \`@modelcontextprotocol/sdk\` 1.32.2 on node:http (bench/servers/node_http_server.mjs). Server CPU is user + system time of the server process over the measured run, divided by the calls answered."
  for note in "${notes[@]}"; do echo; echo "Note: $note"; done
} >"$results_file"
say "wrote $results_file"
cat "$results_file"
