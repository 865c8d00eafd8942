#!/usr/bin/env bash
# Where PostgreSQL spends its CPU under the store benchmark's server, beside what the same
# PostgreSQL spends on the simplest transactions (the floor):
#
#   bench/postgres-profile.sh                      # `touch`, 1 and 32 clients, 5 s each (~1 min)
#   bench/postgres-profile.sh --tool note --clients 32
#   bench/postgres-profile.sh --floor-only         # pgbench alone
#
# Per case: calls/s, PostgreSQL's CPU per call (every postgres process, from /proc, those that
# exited included), and pg_stat_statements with `track = all`, so the statements run inside the
# layout's functions and triggers are listed too, each with its calls per tool call. The floor
# is pgbench (prepared statements) on the same server: `SELECT 1`, and a one-row INSERT in its
# own synced commit, the least a durable claim can cost. PostgreSQL runs with its defaults
# (fsync and synchronous_commit on); pg_stat_statements costs a little CPU of its own.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tool=touch
client_counts=(1 32)
seconds=5
floor_only=0
command_line="bench/postgres-profile.sh${*:+ $*}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tool) tool="$2"; shift 2 ;;
    --clients) client_counts=("$2"); shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --floor-only) floor_only=1; shift ;;
    *) echo "usage: $0 [--tool touch|note|note_serial] [--clients N] [--seconds N] [--floor-only]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/lib.sh
source bench/lib.sh
say() { echo "postgres-profile.sh: $*" >&2; }
bash scripts/services.sh >&2
if [[ $floor_only == 0 ]]; then
  say "building the server and the load driver (release)"
  cargo build --release --quiet -p carmy-bench -p carmy-mcp --bin bench-store-server --example http_load
fi
bin="${CARGO_TARGET_DIR:-target}/release"

scratch="$(mktemp -d /tmp/carmy-pg-profile-XXXXXX)"
chmod 755 "$scratch"
find_postgres
port="$(free_port)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

mkdir -p "$scratch/run"
if [[ ${#as_postgres[@]} -gt 0 ]]; then chown postgres "$scratch" "$scratch/run"; fi
"${as_postgres[@]}" "$pg_bin/initdb" -D "$scratch/pg" -A trust -U postgres -E UTF8 >/dev/null
"${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -l "$scratch/pg.log" -w start -o \
  "-p $port -k $scratch/run -c listen_addresses=127.0.0.1 -c max_connections=200 \
   -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all" >/dev/null
psql() { "${as_postgres[@]}" "$pg_bin/psql" -q -X -h 127.0.0.1 -p "$port" -U postgres "$@"; }

# Clock ticks of every postgres process, with those of children it has reaped (pgbench's
# connections end before the count is taken).
postgres_ticks() {
  local total=0 pid
  for pid in $(pgrep -u postgres -f "postgres|postmaster" || true); do
    total=$((total + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

echo "# PostgreSQL profile: $(date +%F)"
echo
echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(uname -r);"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}'), its defaults (fsync, synchronous_commit on)."
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg). Command: \`$command_line\`."
echo "Commit: $(tree_commit)."
echo

echo "## The floor: pgbench, prepared, 4 s each"
echo
echo "| transaction | clients | transactions/s | PostgreSQL CPU µs/transaction |"
echo "|---|--:|--:|--:|"
psql -c "CREATE TABLE floor (k bigserial PRIMARY KEY, v text)"
echo "SELECT 1;" >"$scratch/select.sql"
echo "INSERT INTO floor (v) VALUES ('x');" >"$scratch/insert.sql"
chmod 644 "$scratch"/*.sql
for script in select insert; do
  for clients in 1 32; do
    before="$(postgres_ticks)"
    out="$("${as_postgres[@]}" "$pg_bin/pgbench" -n -M prepared -h 127.0.0.1 -p "$port" \
      -U postgres -c "$clients" -j 2 -T 4 -f "$scratch/$script.sql" postgres 2>&1)"
    after="$(postgres_ticks)"
    done_count="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")"
    name="\`SELECT 1\`"
    [[ $script == insert ]] && name="one-row INSERT, its own commit"
    echo "| $name | $clients | $((done_count / 4)) | $(per_call_us "$before" "$after" "$done_count") |"
  done
done
echo
[[ $floor_only == 1 ]] && exit 0

psql -c "CREATE DATABASE profile"
psql -d profile -c "CREATE EXTENSION pg_stat_statements"
max_clients=0
for clients in "${client_counts[@]}"; do (( clients > max_clients )) && max_clients=$clients; done
start_store_server "postgres://postgres@127.0.0.1:$port/profile" "$max_clients"

for clients in "${client_counts[@]}"; do
  store_tokens "$clients"
  load=("$bin/examples/http_load" --url "$url" "${token_flags[@]}" --clients "$clients"
    --tool "$tool" --arguments '{"text":"profile"}' --request-ids)
  "${load[@]}" --seconds 1 >/dev/null
  psql -d profile -c "SELECT pg_stat_statements_reset()" >/dev/null
  before="$(postgres_ticks)"
  out="$("${load[@]}" --seconds "$seconds")"
  after="$(postgres_ticks)"
  calls="$(load_field "$out" calls)"
  echo "## \`$tool\`, $clients client$([[ $clients == 1 ]] || echo s), $seconds s"
  echo
  echo "$(head -1 <<<"$out")"
  echo
  echo "PostgreSQL CPU per call: $(per_call_us "$before" "$after" "$calls") µs."
  echo
  echo "| per call | µs of execution per call | mean µs | top level | statement |"
  echo "|--:|--:|--:|---|---|"
  psql -d profile -A -t -F '|' -c "
    SELECT round(calls::numeric / $calls, 2), round((total_exec_time * 1000 / $calls)::numeric, 1),
           round((mean_exec_time * 1000)::numeric, 1), toplevel,
           replace(left(regexp_replace(query, '\s+', ' ', 'g'), 100), '|', '\|')
    FROM pg_stat_statements
    WHERE query NOT LIKE '%pg_stat_statements%'
    ORDER BY total_exec_time DESC LIMIT 20" | sed 's/^/| /; s/$/ |/'
  echo
done
echo "Execution time is wall time inside PostgreSQL: it includes waits for locks and, at the top"
echo "level, the statements run inside it."
