#!/usr/bin/env bash
# The stdio ratio under different drivers and with one core or two for the server: why Carmy
# against rmcp by hand on pipes reads 2× in one run and 1.1× in another.
#
#   bench/stdio-drivers.sh               # ~6 min after the build
#
# Three servers: the shop (`--store memory`, its call thread on, as it ships), the same shop
# on one thread (`CARMY_SERVER__WORKER_THREADS=1`: no call thread), and the hand-written rmcp
# handler on `stdio_pipes()`. Three ways to drive them, 32 callers pipelined over the one
# connection in each:
#   1. mcp-load (bench/src/bin/mcp-load/), free to use both cores, as bench/run.sh runs it;
#   2. mcp-load on core 0 and the server on core 1 (taskset): one core each, nothing shared;
#   3. bench/simple_stdio_load.py, a plain asyncio driver of the kind anyone would write, which
#      spends several times mcp-load's CPU per call.
# Writes bench/results/<date>-stdio-drivers.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
say() { echo "stdio-drivers.sh: $*" >&2; }
if [[ "$(nproc)" -lt 2 ]]; then
  echo "stdio-drivers.sh: needs two cores (one for the driver, one for the server)" >&2
  exit 1
fi
say "building the driver and the servers (release)"
cargo build --release --quiet -p carmy-bench -p shop --bin mcp-load --bin bench-rmcp-handler --bin shop
bin="${CARGO_TARGET_DIR:-target}/release"
shop="$bin/shop mcp --store memory"
rmcp="$bin/bench-rmcp-handler --pipes"
scratch="$(mktemp -d /tmp/carmy-stdio-drivers-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
load=(--runs 3 --calls 2000 --cold-starts 3 --duration 5)
# The table's contender, runs, sequential p50, and the concurrent phase's calls/s, CPU per call
# and cores.
columns() { grep '^|' "$1" | cut -d'|' -f2,3,5,9,13,14 | sed 's/^/|/; s/$/|/'; }

say "1/3: mcp-load, both cores"
"$bin/mcp-load" "${load[@]}" \
  --contender "carmy-shop=$shop" \
  --contender "carmy-shop-one-thread=env CARMY_SERVER__WORKER_THREADS=1 $shop" \
  --contender "rmcp-handler-pipes=$rmcp" \
  --markdown "$scratch/free.md" >/dev/null
say "2/3: mcp-load on core 0, each server on core 1"
taskset -c 0 "$bin/mcp-load" "${load[@]}" \
  --contender "carmy-shop=taskset -c 1 $shop" \
  --contender "carmy-shop-one-thread=env CARMY_SERVER__WORKER_THREADS=1 taskset -c 1 $shop" \
  --contender "rmcp-handler-pipes=taskset -c 1 $rmcp" \
  --markdown "$scratch/pinned.md" >/dev/null
say "3/3: the asyncio driver, three alternations"
python_rows=()
for round in 1 2 3; do
  for contender in "carmy-shop|" "carmy-shop-one-thread|CARMY_SERVER__WORKER_THREADS=1" "rmcp-handler-pipes|"; do
    name="${contender%%|*}"
    environment="${contender#*|}"
    command="$shop"
    [[ $name == rmcp-handler-pipes ]] && command="$rmcp"
    # shellcheck disable=SC2086 # the command is split on purpose
    line="$(env $environment python3 bench/simple_stdio_load.py --seconds 5 -- $command)"
    field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$line"; }
    python_rows+=("| $name | $round | $(field throughput) | $(field server_cpu_us_per_call) | $(field server_cores) | $(field driver_cpu_us_per_call) | $(field driver_cores) |")
  done
done

results="bench/results/$(date +%F)-stdio-drivers.md"
{
  echo "# stdio under three drivers: $(date +%F)"
  echo
  echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(uname -r);"
  echo "$(rustc --version); Python $(python3 -c 'import platform; print(platform.python_version())')."
  echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Commit: $(tree_commit). Command: \`bench/stdio-drivers.sh\`."
  echo
  echo "## 1. mcp-load, both cores free (as bench/run.sh)"
  echo
  columns "$scratch/free.md"
  echo
  echo "## 2. mcp-load on core 0, the server on core 1"
  echo
  columns "$scratch/pinned.md"
  echo
  echo "mcp-load: 3 interleaved runs of each, medians; 32 callers for 5 s after 500 warm-up and"
  echo "2,000 sequential calls. CPU/call is the server's CPU over the concurrent phase per call."
  echo
  echo "## 3. bench/simple_stdio_load.py (asyncio), both cores free"
  echo
  echo "| server | round | calls/s | server CPU µs/call | server cores | driver CPU µs/call | driver cores |"
  echo "|---|--:|--:|--:|--:|--:|--:|"
  printf '%s\n' "${python_rows[@]}"
} >"$results"
say "wrote $results"
