#!/usr/bin/env bash
# Two builds of the store benchmark's server on one store, alternated: calls/s and CPU per call
# of the server and of the database for each (and, on Redis, commands per call), so that a
# change to a store or to the runtime is measured against the code before it under the same
# machine's mood (this VM's speed moves by 2x across a day).
#
#   bench/store-ab.sh OLD NEW --store redis                    # `touch`, 4 rounds of 5 s, 32 clients
#   bench/store-ab.sh OLD NEW --store postgres --tool note --rounds 3
#   bench/store-ab.sh OLD NEW --store sqlite --tool note
#
# OLD and NEW are `bench-store-server` binaries; to build one of another commit:
#
#   git worktree add /tmp/carmy-old <commit>
#   cargo build --release -p carmy-bench --bin bench-store-server \
#     --manifest-path /tmp/carmy-old/Cargo.toml --target-dir /tmp/carmy-old-target
#
# The stores are durable as in bench/stores.sh: PostgreSQL with its defaults (fsync on,
# synchronous_commit on), Redis with `appendonly yes` and `appendfsync always`, SQLite's file in
# WAL with synchronous FULL. Each case starts on an empty store, gets a 1 s warm-up, then
# `http_load` with a fresh request id per call.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
usage="usage: $0 OLD NEW --store sqlite|postgres|redis|memory [--tool touch|note|note_serial] [--rounds N] [--seconds N] [--clients N]"
[[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }
old="$(realpath "$1")"
new="$(realpath "$2")"
shift 2
store=""
tool=touch
rounds=4
seconds=5
clients=32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --store) store="$2"; shift 2 ;;
    --tool) tool="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case "$store" in
  sqlite | postgres | redis | memory) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

# shellcheck source=bench/lib.sh
source bench/lib.sh
bash scripts/services.sh >&2
cargo build --release --quiet -p carmy-mcp --example http_load
load="${CARGO_TARGET_DIR:-target}/release/examples/http_load"

scratch="$(mktemp -d /tmp/carmy-store-ab-XXXXXX)"
chmod 755 "$scratch"
port="$(free_port)"
server_pid=""
redis_pid=""
find_postgres
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  [[ -n "$redis_pid" ]] && redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  [[ -d "$scratch/pg" ]] && "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

case "$store" in
  redis) start_redis "$port" "$scratch" ;;
  postgres)
    mkdir -p "$scratch/pg-run"
    if [[ ${#as_postgres[@]} -gt 0 ]]; then chown postgres "$scratch" "$scratch/pg-run"; fi
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$scratch/pg" -A trust -U postgres -E UTF8 >/dev/null
    "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -l "$scratch/pg.log" -w start \
      -o "-p $port -k $scratch/pg-run -c listen_addresses=127.0.0.1 -c max_connections=200" >/dev/null
    ;;
  *) ;;
esac
store_tokens "$clients"
# start_store_server runs "$bin/bench-store-server": each build gets a directory of its own.
for build in old new; do
  mkdir "$scratch/$build"
  ln -s "${!build}" "$scratch/$build/bench-store-server"
done

# An empty store for the next case: its `--store` value.
fresh_store() {
  case "$store" in
    memory) echo memory ;;
    sqlite)
      rm -f "$scratch/store.sqlite"*
      echo "$scratch/store.sqlite"
      ;;
    redis)
      redis-cli -p "$port" FLUSHALL >/dev/null
      echo "redis://127.0.0.1:$port/0"
      ;;
    postgres)
      "${as_postgres[@]}" "$pg_bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres \
        -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench" >/dev/null
      echo "postgres://postgres@127.0.0.1:$port/bench"
      ;;
  esac
}
db_pids() {
  case "$store" in
    postgres)
      # The cluster's postmaster and its backends.
      local postmaster
      postmaster="$(head -1 "$scratch/pg/postmaster.pid")"
      echo "$postmaster"
      pgrep -P "$postmaster" || true
      ;;
    redis) echo "$redis_pid" ;;
    *) ;;
  esac | sort -u
}

header="| round | build | calls/s | p50 ms | server CPU µs/call | database CPU µs/call |"
rule="|--:|---|--:|--:|--:|--:|"
if [[ "$store" == redis ]]; then
  header="$header commands/call |"
  rule="$rule--:|"
fi
echo "$header"
echo "$rule"
for round in $(seq "$rounds"); do
  for build in old new; do
    bin="$scratch/$build"
    location="$(fresh_store)"
    : >"$scratch/tokens"
    start_store_server "$location" "$clients"
    "$load" --url "$url" "${token_flags[@]}" --clients "$clients" --seconds 1 --tool "$tool" \
      --arguments '{"text":"x"}' --request-ids >/dev/null
    [[ "$store" == redis ]] && redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
    mapfile -t db < <(db_pids)
    server_before="$(cpu_ticks "$server_pid")"
    db_before="$(cpu_ticks "${db[@]}")"
    line="$("$load" --url "$url" "${token_flags[@]}" --clients "$clients" \
      --seconds "$seconds" --tool "$tool" --arguments '{"text":"x"}' --request-ids | head -1)"
    mapfile -t db < <(db_pids)
    server_after="$(cpu_ticks "$server_pid")"
    db_after="$(cpu_ticks "${db[@]}")"
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    calls="$(load_field "$line" calls)"
    database="–"
    [[ ${#db[@]} -gt 0 ]] && database="$(per_call_us "$db_before" "$db_after" "$calls")"
    row="| $round | $build | $(load_field "$line" throughput) | $(load_field "$line" p50) | $(per_call_us "$server_before" "$server_after" "$calls") | $database |"
    if [[ "$store" == redis ]]; then
      commands="$(redis-cli -p "$port" INFO commandstats | grep '^cmdstat_' \
        | grep -v -e '^cmdstat_evalsha:' -e '^cmdstat_config' -e '^cmdstat_info' \
        | sed 's/.*:calls=\([0-9]*\),.*/\1/' | paste -sd+ | bc)"
      row="$row $(echo "scale=1; $commands / $calls" | bc) |"
    fi
    echo "$row"
  done
done
