#!/usr/bin/env bash
# The stdio MCP benchmark, one line to rerun from anywhere:
#
#   bench/run.sh                 # 3 interleaved runs of every available contender (~4 min)
#   bench/run.sh --quick         # a smoke test (~1 min), written as *-stdio-quick.*
#   bench/run.sh --pipes         # also the rmcp contenders over stdio_pipes()
#   bench/run.sh --runs 5        # any other option goes to mcp-load (see mcp-load --help)
#   bench/run.sh --all           # --pipes, then HTTP (http.sh), stores (stores.sh) and build
#                                # cost (build-cost.sh, debug), all in one file (~35 min)
#
# Builds the driver and the contenders in release, installs the optional Python/TypeScript
# contenders (bench/setup.sh), runs mcp-load over every contender that exists, then over the
# shop's resource reads beside the same reads by hand in rmcp, and writes
# bench/results/<date>-stdio.md (with --all, <date>-all.md) and .jsonl with the machine it ran
# on.
#
# The shop is measured twice: `carmy-shop` is the example as a user builds their own binary,
# `carmy-shop-tuned` its main linked with the hot code first (bench/build.rs, bench/tuned/).
# Both come out of one cargo invocation, so they share every dependency's build and differ
# only in how they are linked. `carmy-defaults` is the same tool in a binary of its own with
# Carmy's default features only, where the shop links every optional one.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${CARGO_TARGET_DIR:-target}/release"

quick=0
pipes=0
all=0
args=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1; args+=("$arg") ;;
    --pipes) pipes=1 ;;
    --all) all=1; pipes=1 ;;
    *) args+=("$arg") ;;
  esac
done
case " ${args[*]-} " in
  *" --runs"*) ;;
  *) [ "$quick" = 1 ] || args+=(--runs 3) ;;
esac

notes=()
note() { notes+=("$1"); echo "run.sh: $1" >&2; }

echo "run.sh: building the driver and the Rust contenders (release)" >&2
cargo build --release --quiet -p carmy-bench -p shop --bins
# Carmy with its default features alone, in an invocation of its own: built with the packages
# above, cargo would unify their features into it (bench/defaults/).
cargo build --release --quiet -p carmy-bench-defaults

contenders=(
  --contender "rmcp-handler=$bin/bench-rmcp-handler"
  --contender "rmcp-macros=$bin/bench-rmcp-macros"
)
if [ "$pipes" = 1 ]; then
  contenders+=(
    --contender "rmcp-handler-pipes=$bin/bench-rmcp-handler --pipes"
    --contender "rmcp-macros-pipes=$bin/bench-rmcp-macros --pipes"
  )
fi
# The in-memory idempotency store, as shop-tuned has: these figures compare serving, not stores
# (the shop's default, a SQLite file, syncs each finished write to disk).
# The one-thread shop keeps every call on the serve loop (no call thread): what the second core
# adds.
contenders+=(
  --contender "carmy-shop=$bin/shop mcp --store memory"
  --contender "carmy-shop-one-thread=env CARMY_SERVER__WORKER_THREADS=1 $bin/shop mcp --store memory"
  --contender "carmy-shop-tuned=$bin/shop-tuned mcp"
  --contender "carmy-defaults=$bin/bench-carmy-defaults mcp"
)
# A stale list (after a dependency or toolchain update) quietly degrades the tuned build.
note "hot-function list: $(bench/tuned/refresh.sh --check)"

bench/setup.sh >&2 || note "bench/setup.sh did not finish cleanly; missing contenders are skipped"
if bench/.venv/bin/python -c "import mcp.server.mcpserver" 2>/dev/null; then
  contenders+=(--contender "python-mcp=bench/.venv/bin/python bench/servers/python_server.py")
else
  note "python-mcp skipped: PyPI \`mcp\` is not installed in bench/.venv"
fi
if command -v node >/dev/null && [ -d bench/node_modules/@modelcontextprotocol/sdk ]; then
  contenders+=(--contender "ts-sdk=node bench/servers/node_server.mjs")
else
  note "ts-sdk skipped: node or npm \`@modelcontextprotocol/sdk\` is missing"
fi

mkdir -p bench/results
stamp="$(date +%F)"
out="bench/results/$stamp-stdio"
[ "$all" = 1 ] && out="bench/results/$stamp-all"
[ "$quick" = 1 ] && out="$out-quick"
rm -f "$out.jsonl"
table="$(mktemp)"
reads="$(mktemp)"
trap 'rm -f "$table" "$reads"' EXIT

status=0
"$bin/mcp-load" "${contenders[@]}" "${args[@]}" --jsonl "$out.jsonl" --markdown "$table" >&2 ||
  status=$?

# Resource reads, each kind of URI apart, with the call above as the reference: the catalog (no
# variables), a product (its id checked against the resource's input, its stock read from the
# store), a file under the resource root (the path confined to it, read from disk); the first
# two by hand in rmcp (the products alone, no store) beside them.
policies="$root/examples/shop/policies"
shop=(--contender "carmy-shop/call=$bin/shop mcp --store memory --resource-root $policies")
for read in catalog=shop://catalog product=shop://products/sku-001 "file=file://$policies/returns.md"; do
  shop+=(--workload "read:${read#*=}" --contender "carmy-shop/read-${read%%=*}=$bin/shop mcp --store memory --resource-root $policies")
done
for read in catalog=shop://catalog product=shop://products/sku-001; do
  shop+=(--workload "read:${read#*=}" --contender "rmcp-handler-pipes/read-${read%%=*}=$bin/bench-rmcp-handler --pipes")
done
"$bin/mcp-load" "${shop[@]}" "${args[@]}" --jsonl "$out.jsonl" --markdown "$reads" >&2 ||
  status=$?

# The other benchmarks write their own files; --all gathers them into this one.
others=()
if [ "$all" = 1 ]; then
  bench/http.sh >&2 || status=$?
  others+=("bench/results/$stamp-http.md")
  bench/stores.sh >&2 || status=$?
  others+=("bench/results/$stamp-stores.md")
  TOOLS=200 RUNS=1 PROFILES=debug bench/build-cost.sh >&2 || status=$?
  others+=("bench/results/$stamp-build-cost.md")
fi

{
  if [ "$all" = 1 ]; then echo "# Carmy benchmarks, $stamp"; else echo "# stdio MCP benchmark, $stamp"; fi
  echo
  echo "Rerun: \`bench/run.sh ${*}\`"
  echo
  echo "## Machine"
  echo
  echo "- cores: $(nproc); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "- memory: $(free -h | awk '/^Mem:/ {print $2}'); kernel: $(uname -sr)"
  echo "- $(rustc --version); node $(node --version 2>/dev/null || echo absent); $(bench/.venv/bin/python --version 2>/dev/null || echo 'python absent')"
  echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- bench 2>/dev/null || echo ' (bench/ modified)')"
  echo
  echo "## stdio: \`tools/call\`"
  echo
  cat "$table"
  echo
  echo "## stdio: resource reads"
  echo
  cat "$reads"
  for other in "${others[@]}"; do
    echo
    # Each file's title becomes a section; its own headings go one level down.
    if [ -f "$other" ]; then
      sed -e '1s/^# /## /' -e '2,$s/^## /### /' "$other"
    else
      echo "## $(basename "$other" .md): missing (the script failed before writing it)"
    fi
  done
  if [ "${#notes[@]}" -gt 0 ]; then
    echo
    echo "## Notes"
    echo
    for n in "${notes[@]}"; do echo "- $n"; done
  fi
  echo
  echo "Raw figures, one JSON line per contender per run: \`$(basename "$out").jsonl\`."
} >"$out.md"
echo "run.sh: wrote $out.md and $out.jsonl" >&2
cat "$out.md"
exit "$status"
