# Shell helpers shared by the benchmarks (bench/http.sh, stores.sh, postgres-profile.sh,
# redis-profile.sh, store-ab.sh, stdio-drivers.sh): sourced, not run.

# The URL a server started in the background announces in LOG ("listening on http://.../mcp"),
# printed once it is there; the log is shown and the script exits when PID dies first or 10 s
# pass.
wait_for_url() {
  local log="$1" pid="$2" url=""
  for _ in $(seq 200); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -1 || true)"
    [[ -n "$url" ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
  done
  [[ -n "$url" ]] || { cat "$log" >&2; exit 1; }
  echo "$url"
}

# CPU ticks (user + system) the processes PID... have used so far, their exited threads
# included; gone ones count 0. Ticks are 1/`getconf CLK_TCK` s.
cpu_ticks() {
  local total=0 pid fields
  for pid in "$@"; do
    fields="$(cut -d' ' -f14,15 "/proc/$pid/stat" 2>/dev/null)" || continue
    total=$((total + ${fields% *} + ${fields#* }))
  done
  echo "$total"
}

# The value of NAME in http_load's summary LINE (`calls=... throughput=.../s p50=...ms`),
# without its unit.
load_field() {
  sed -n "s/.*\\b$2=\\([0-9.]*\\).*/\\1/p" <<<"$1"
}

# A loopback port nobody listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The commit the working tree is at, with " (modified)" when tracked files differ from it.
tree_commit() {
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
}

# Microseconds per call of the CPU ticks between BEFORE and AFTER, over CALLS calls.
per_call_us() {
  python3 -c "print(round(($2 - $1) * 1e6 / $(getconf CLK_TCK) / max($3, 1)))"
}

# PostgreSQL's newest installed binaries (scripts/services.sh installs them) in `pg_bin`, and in
# `as_postgres` the prefix that runs a command as the postgres user when this script is root.
find_postgres() {
  pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  as_postgres=()
  if [[ $(id -u) -eq 0 ]]; then as_postgres=(runuser -u postgres --); fi
}

# Starts Redis on loopback PORT with its files in DIR, durable as the benchmarks measure it
# (`appendonly yes`, `appendfsync always`), and waits until it answers; sets `redis_pid`. Stop
# it with `redis-cli -p PORT shutdown nosave`.
start_redis() {
  local port="$1" dir="$2"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --appendonly yes \
    --appendfsync always --save '' --daemonize yes --pidfile "$dir/redis.pid" \
    --logfile "$dir/redis.log"
  for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
  redis_pid="$(cat "$dir/redis.pid")"
}

# Starts the store benchmark's server (`$bin/bench-store-server`, stateless HTTP) on the store
# STORE for up to CLIENTS clients, each its own principal, with its token file and state keys in
# `$scratch`: sets `server_pid` and `url`. `store_tokens N` then gives the first N clients'
# `--token` flags, in `token_flags`.
start_store_server() {
  local store="$1" clients="$2" i
  (umask 077 && echo "bench $(head -c 32 /dev/urandom | base64)" >"$scratch/keys")
  for i in $(seq "$clients"); do
    echo "bench-profile-token-$i client-$i" >>"$scratch/tokens"
  done
  chmod 600 "$scratch/tokens"
  "$bin/bench-store-server" http --stateless --addr 127.0.0.1:0 --store "$store" \
    --token-file "$scratch/tokens" --state-keys-file "$scratch/keys" 2>"$scratch/server.log" &
  server_pid=$!
  url="$(wait_for_url "$scratch/server.log" "$server_pid")"
}
store_tokens() {
  local i
  token_flags=()
  for i in $(seq "$1"); do token_flags+=(--token "bench-profile-token-$i"); done
}
