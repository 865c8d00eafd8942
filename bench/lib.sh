# Shell helpers shared by the HTTP benchmarks (bench/http.sh, bench/stores.sh): sourced, not run.

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
