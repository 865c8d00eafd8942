#!/usr/bin/env bash
# The stdio MCP benchmark, one line to rerun from anywhere:
#
#   bench/run.sh                 # 3 interleaved runs of every available contender (~4 min)
#   bench/run.sh --quick         # a smoke test (~1 min), written as *-stdio-quick.*
#   bench/run.sh --pipes         # also the rmcp contenders over stdio_pipes()
#   bench/run.sh --runs 5        # any other option goes to mcp-load (see mcp-load --help)
#
# Builds the driver and the contenders in release, installs the optional Python/TypeScript
# contenders (bench/setup.sh), runs target/release/mcp-load over every contender that exists,
# and writes bench/results/<date>-stdio.md and .jsonl with the machine it ran on.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

quick=0
pipes=0
args=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1; args+=("$arg") ;;
    --pipes) pipes=1 ;;
    *) args+=("$arg") ;;
  esac
done
case " ${args[*]-} " in
  *" --runs"*) ;;
  *) [ "$quick" = 1 ] || args+=(--runs 3) ;;
esac

notes=()
note() { notes+=("$1"); echo "run.sh: $1" >&2; }

echo "run.sh: building the driver and the rmcp contenders (release)" >&2
cargo build --release --quiet -p carmy-bench --bins

contenders=(
  --contender "rmcp-handler=target/release/bench-rmcp-handler"
  --contender "rmcp-macros=target/release/bench-rmcp-macros"
)
if [ "$pipes" = 1 ]; then
  contenders+=(
    --contender "rmcp-handler-pipes=target/release/bench-rmcp-handler --pipes"
    --contender "rmcp-macros-pipes=target/release/bench-rmcp-macros --pipes"
  )
fi

# The Carmy shop (examples/shop, package `shop`) is written separately; skip it until it builds.
if cargo metadata --no-deps --format-version 1 2>/dev/null | grep -q '"name":"shop"'; then
  if cargo build --release --quiet -p shop; then
    contenders+=(--contender "carmy-shop=target/release/shop mcp")
  else
    note "carmy-shop skipped: \`cargo build --release -p shop\` failed"
  fi
else
  note "carmy-shop skipped: there is no \`shop\` package in the workspace yet (examples/shop)"
fi

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
[ "$quick" = 1 ] && out="$out-quick"
rm -f "$out.jsonl"
table="$(mktemp)"
trap 'rm -f "$table"' EXIT

status=0
target/release/mcp-load "${contenders[@]}" "${args[@]}" --jsonl "$out.jsonl" --markdown "$table" >&2 ||
  status=$?

{
  echo "# stdio MCP benchmark, $stamp"
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
  echo "## Results"
  echo
  cat "$table"
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
