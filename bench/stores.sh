#!/usr/bin/env bash
# The store benchmark: writes through Carmy's streamable HTTP server (stateless) on each store
# the command line offers (memory, a SQLite file, PostgreSQL, Redis), by one replica and by
# three sharing the store; calls per second, latency, and CPU per call of the servers and of
# the database. Each guarantee is measured apart:
#
#   touch, no request id     serving alone
#   touch, request ids       + a claim and a finish in the store (exactly-once)
#   note,  request ids       + a record written in the step that records the outcome
#
# Both tools are parallel-safe, so the 32 clients' calls reach the store together; each ratio
# is against the same tool on the memory store in the same run. `note_serial` is `note`
# without `parallel_safe`: the runtime runs it one call at a time, so it measures a commit's
# latency, not what the store can do.
#
#   bench/stores.sh                 # ~3 min: 16 cases of 5 s, after the build
#   bench/stores.sh --seconds 3     # shorter
#   bench/stores.sh --clients 16
#
# PostgreSQL and Redis are installed by scripts/services.sh and started here on loopback, with
# their durable settings: PostgreSQL's defaults (fsync on, synchronous_commit on), Redis with
# appendonly yes and appendfsync always. Writes bench/results/<date>-stores.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# 5 s per case. The server's memory store holds 1,000,000 request ids (bench-store-server.rs),
# ~50 s of this load; a case that fails calls anyway is named under the table.
seconds=5
clients=32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    *) echo "usage: $0 [--seconds N] [--clients N]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
source bench/lib.sh
say() { echo "stores.sh: $*" >&2; }
bash scripts/services.sh >&2
say "building the server and the load driver (release)"
# One invocation: the packages' features resolve once, so the driver adds no dependency build.
cargo build --release --quiet -p carmy-bench -p carmy-mcp --bin bench-store-server --example http_load
# The tree the binaries are built from (a change outside bench/ while it runs is not measured).
commit="$(tree_commit)"
bin="${CARGO_TARGET_DIR:-target}/release"
server="$bin/bench-store-server"
load="$bin/examples/http_load"

scratch="$(mktemp -d /tmp/carmy-stores-XXXXXX)"
chmod 755 "$scratch"
find_postgres
pg_port="$(free_port)"
redis_port="$(free_port)"
replicas=()
cleanup() {
  for pid in "${replicas[@]}"; do kill "$pid" 2>/dev/null || true; done
  "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -m immediate stop >/dev/null 2>&1 || true
  [[ -f "$scratch/redis/redis.pid" ]] && kill "$(cat "$scratch/redis/redis.pid")" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

say "starting PostgreSQL on 127.0.0.1:$pg_port and Redis on 127.0.0.1:$redis_port"
mkdir -p "$scratch/pg-run" "$scratch/redis"
if [[ ${#as_postgres[@]} -gt 0 ]]; then chown postgres "$scratch/pg-run"; chown postgres "$scratch"; fi
"${as_postgres[@]}" "$pg_bin/initdb" -D "$scratch/pg" -A trust -U postgres -E UTF8 >/dev/null
"${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -l "$scratch/pg.log" -w start \
  -o "-p $pg_port -k $scratch/pg-run -c listen_addresses=127.0.0.1 -c max_connections=200" >/dev/null
start_redis "$redis_port" "$scratch/redis"
# A fresh database named $1 for one case (request ids repeat from case to case).
new_database() {
  "${as_postgres[@]}" "$pg_bin/psql" -q -h 127.0.0.1 -p "$pg_port" -U postgres \
    -c "CREATE DATABASE bench_$1" >/dev/null
  echo "postgres://postgres@127.0.0.1:$pg_port/bench_$1"
}

# One principal per client: each principal's share of request ids (10,000 by default) would
# fill up in a few seconds of load from one.
tokens="$scratch/tokens"
# Replicas sharing a store share the keys that seal their round trips' states.
keys="$scratch/state-keys"
(umask 077 && echo "bench $(head -c 32 /dev/urandom | base64)" >"$keys")
token_flags=()
for i in $(seq "$clients"); do
  echo "bench-store-token-$i client-$i" >>"$tokens"
  token_flags+=(--token "bench-store-token-$i")
done
chmod 600 "$tokens"

db_pids() {
  case "$1" in
    postgres) pgrep -u postgres -f "$pg_bin/postgres" || true; pgrep -u postgres -x postgres || true ;;
    redis) echo "$redis_pid" ;;
    *) ;;
  esac | sort -u
}

results="bench/results/$(date +%F)-stores.md"
rows=()
# calls/s of each tool (with request ids) on the memory store: what the other stores are to.
declare -A on_memory=()
failed=()
# One case: $1 store kind, $2 --store value, $3 replicas, $4 tool, $5 "ids" or "none".
run_case() {
  local kind="$1" store="$2" count="$3" tool="$4" ids="$5"
  local urls=() pids=() log i
  replicas=()
  for i in $(seq "$count"); do
    log="$scratch/replica-$i.log"
    "$server" http --stateless --addr 127.0.0.1:0 --store "$store" --token-file "$tokens" \
      --state-keys-file "$keys" 2>"$log" &
    pids+=($!)
    replicas+=($!)
    local url
    url="$(wait_for_url "$log" "${pids[-1]}")" || exit 1
    urls+=(--url "$url")
  done
  local id_flag=()
  [[ "$ids" == ids ]] && id_flag=(--request-ids)
  # A short warm-up, not measured: connections, statement caches, the page cache.
  "$load" "${urls[@]}" "${token_flags[@]}" --clients "$clients" --seconds 1 --tool "$tool" \
    --arguments '{"text":"x"}' "${id_flag[@]}" >/dev/null
  local db
  mapfile -t db < <(db_pids "$kind")
  local server_before db_before server_after db_after
  server_before="$(cpu_ticks "${pids[@]}")"
  db_before="$(cpu_ticks "${db[@]}")"
  local output line
  output="$("$load" "${urls[@]}" "${token_flags[@]}" --clients "$clients" --seconds "$seconds" --tool "$tool" \
    --arguments '{"text":"x"}' "${id_flag[@]}")"
  line="${output%%$'\n'*}"
  [[ "$output" == *$'\n'* ]] && say "$kind x$count $tool: ${output#*$'\n'}"
  mapfile -t db < <(db_pids "$kind")
  server_after="$(cpu_ticks "${pids[@]}")"
  db_after="$(cpu_ticks "${db[@]}")"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  replicas=()
  local calls errors throughput p50 p99
  calls="$(load_field "$line" calls)"
  errors="$(load_field "$line" errors)"
  throughput="$(load_field "$line" throughput)"
  p50="$(load_field "$line" p50)"
  p99="$(load_field "$line" p99)"
  local per_call_server per_call_db
  per_call_server="$(per_call_us "$server_before" "$server_after" "$calls")"
  if [[ "$kind" == postgres || "$kind" == redis ]]; then
    per_call_db="$(per_call_us "$db_before" "$db_after" "$calls")"
  else
    per_call_db="–"
  fi
  local id_text="no" ratio="–"
  [[ "$ids" == ids ]] && id_text="yes"
  if [[ "$ids" == ids && "$kind" == memory ]]; then
    on_memory[$tool]="$throughput"
  elif [[ "$ids" == ids && -n "${on_memory[$tool]:-}" ]]; then
    ratio="$(python3 -c "print(f'{$throughput/${on_memory[$tool]}:.2f}×')")"
  fi
  say "$kind x$count $tool ids=$id_text: $line"
  if [[ "$errors" != 0 ]]; then
    failed+=("$kind x$count \`$tool\` (request ids: $id_text): $errors of $calls calls failed, and its calls/s counts them; the first error: ${output#*$'\n'}")
  fi
  rows+=("| $kind | $count | \`$tool\` | $id_text | $throughput | $ratio | $p50 | $p99 | $per_call_server | $per_call_db | $errors |")
}

run_case memory memory 1 touch none
run_case memory memory 1 touch ids
run_case memory memory 1 note ids
run_case memory memory 1 note_serial ids
run_case sqlite "$scratch/touch.sqlite" 1 touch ids
run_case sqlite "$scratch/note.sqlite" 1 note ids
run_case sqlite "$scratch/serial.sqlite" 1 note_serial ids
run_case sqlite "$scratch/shared.sqlite" 3 note ids
run_case postgres "$(new_database touch)" 1 touch ids
run_case postgres "$(new_database note)" 1 note ids
run_case postgres "$(new_database serial)" 1 note_serial ids
run_case postgres "$(new_database note3)" 3 note ids
run_case redis "redis://127.0.0.1:$redis_port/0" 1 touch ids
run_case redis "redis://127.0.0.1:$redis_port/1" 1 note ids
run_case redis "redis://127.0.0.1:$redis_port/2" 1 note_serial ids
run_case redis "redis://127.0.0.1:$redis_port/3" 3 note ids

{
  echo "# Stores: $(date +%F)"
  echo
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/ {print $2}') GiB;"
  echo "$(uname -sr); $(rustc --version); PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}'), Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')."
  echo "Load average before the run: $(cut -d' ' -f1-3 /proc/loadavg). The driver, the servers and the database share the machine."
  echo "Commit: $commit."
  echo
  echo "Command: \`bench/stores.sh --seconds $seconds --clients $clients\` ($clients clients on keep-alive HTTP/1.1, spread over the replicas; $seconds s per case after a 1 s warm-up)."
  echo
  echo "| store | replicas | tool | request id | calls/s | × memory | p50 ms | p99 ms | server CPU µs/call | database CPU µs/call | errors |"
  echo "|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|"
  printf '%s\n' "${rows[@]}"
  echo
  if [[ ${#failed[@]} -gt 0 ]]; then
    echo "**Cases with failed calls** (their figures are not the store's cost):"
    echo
    printf -- '- %s\n' "${failed[@]}"
    echo
  fi
  echo "\`touch\` does nothing: without a request id it measures serving alone; with one, a claim and a finish in the store. \`note\` is transactional: it writes one record, committed with its outcome. Both are parallel-safe; \`note_serial\` is \`note\` run one call at a time. × memory: calls/s against the same tool on the memory store in this run. Server CPU is summed over the replicas; database CPU over PostgreSQL's processes or Redis's."
} >"$results"
say "wrote $results"
cat "$results"
