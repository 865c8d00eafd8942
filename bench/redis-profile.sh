#!/usr/bin/env bash
# Where Redis spends its CPU under the store benchmark's server: the commands the store's
# scripts run per call, and what each costs.
#
#   bench/redis-profile.sh                      # `touch`, 1 and 32 clients, 5 s each (~1 min)
#   bench/redis-profile.sh --tool note --clients 32
#
# Per case: calls/s, Redis's CPU per call (from /proc), and `INFO commandstats` over the case:
# how many times each command ran per call (inside the scripts too: Redis counts every
# `redis.call`) and its microseconds per call, beside `EVALSHA`'s, which include the commands it
# runs and the Lua around them. Redis runs as in bench/stores.sh: `appendonly yes`,
# `appendfsync always`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tool=touch
client_counts=(1 32)
seconds=5
command_line="bench/redis-profile.sh${*:+ $*}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tool) tool="$2"; shift 2 ;;
    --clients) client_counts=("$2"); shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "usage: $0 [--tool touch|note|note_serial] [--clients N] [--seconds N]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
source bench/lib.sh
say() { echo "redis-profile.sh: $*" >&2; }
bash scripts/services.sh >&2
say "building the server and the load driver (release)"
cargo build --release --quiet -p carmy-bench -p carmy-mcp --bin bench-store-server --example http_load
bin="${CARGO_TARGET_DIR:-target}/release"

scratch="$(mktemp -d /tmp/carmy-redis-profile-XXXXXX)"
port="$(free_port)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

start_redis "$port" "$scratch"

echo "# Redis profile: $(date +%F)"
echo
echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(uname -r);"
echo "Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), appendonly yes, appendfsync always."
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg). Command: \`$command_line\`."
echo "Commit: $(tree_commit)."
echo

max_clients=0
for clients in "${client_counts[@]}"; do (( clients > max_clients )) && max_clients=$clients; done
start_store_server "redis://127.0.0.1:$port/0" "$max_clients"

for clients in "${client_counts[@]}"; do
  store_tokens "$clients"
  load=("$bin/examples/http_load" --url "$url" "${token_flags[@]}" --clients "$clients"
    --tool "$tool" --arguments '{"text":"profile"}' --request-ids)
  "${load[@]}" --seconds 1 >/dev/null
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  before="$(cpu_ticks "$redis_pid")"
  out="$("${load[@]}" --seconds "$seconds")"
  after="$(cpu_ticks "$redis_pid")"
  calls="$(load_field "$out" calls)"
  echo "## \`$tool\`, $clients client$([[ $clients == 1 ]] || echo s), $seconds s"
  echo
  echo "$(head -1 <<<"$out")"
  echo
  echo "Redis CPU per call: $(per_call_us "$before" "$after" "$calls") µs."
  echo
  echo "| command | per call | µs each | µs per call |"
  echo "|---|--:|--:|--:|"
  redis-cli -p "$port" INFO commandstats | tr -d '\r' | python3 -c "
import sys
calls = $calls
rows = []
for line in sys.stdin:
    if not line.startswith('cmdstat_') or 'config' in line:
        continue
    name, stats = line[len('cmdstat_'):].strip().split(':', 1)
    fields = dict(field.split('=') for field in stats.split(','))
    rows.append((int(fields['usec']), name, int(fields['calls']), float(fields['usec_per_call'])))
for usec, name, count, each in sorted(rows, reverse=True):
    print(f'| {name.upper()} | {count / calls:.2f} | {each:.2f} | {usec / calls:.1f} |')
"
  echo
done
echo "EVALSHA's microseconds include the commands its script runs; the others are counted each"
echo "time a script runs them."
