#!/usr/bin/env bash
# Rewrites hot-functions.txt: the functions of the release `shop-tuned` binary (the shop's main,
# built in the carmy-bench package) that run when it serves MCP over stdio, in the order they
# first run. bench/build.rs hands the list to the linker for `shop-tuned` only, which puts them
# first in the text segment, so serving touches a few contiguous pages of code instead of pages
# all over it (bench/README.md, "Memory and cold start", has the figures).
#
#   bench/tuned/refresh.sh           # rebuild, record both sessions under callgrind, rewrite
#   bench/tuned/refresh.sh --check   # how much of the list the current build still has
#
# Run it after a dependency or toolchain update: symbol names carry hashes of the crates they
# come from (their versions and features), and names that no longer exist are skipped by the
# linker (the layout then degrades quietly towards the default one; --check tells). The list is
# recorded from `shop-tuned` itself, built as bench/run.sh builds it: `cargo build -p shop`
# alone resolves other dependency features, hence other hashes. Needs valgrind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
list="$here/hot-functions.txt"
bin="${CARGO_TARGET_DIR:-$root/target}/release/shop-tuned"

cargo build --release --quiet -p carmy-bench --bin shop-tuned
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Every function defined in the binary's code, with its size.
nm --defined-only --print-size --radix=d "$bin" | awk '$3 ~ /^[tTwW]$/ { print $4, $2 + 0 }' \
  > "$work/defined"

report() {
  awk 'NR == FNR { size[$1] = $2; next }
       { listed++; if ($0 in size) { found++; bytes += size[$0] } }
       END { printf "%d of %d listed functions are in %s (%.0f KiB of code)\n",
             found, listed, bin, bytes / 1024 }' bin="${bin#"$root"/}" "$work/defined" "$1"
}

if [ "${1-}" = "--check" ]; then
  report "$list"
  exit 0
fi

command -v valgrind > /dev/null || { echo "refresh.sh: needs valgrind" >&2; exit 1; }
for session in "$here"/session-*.jsonl; do
  name="$(basename "$session" .jsonl)"
  echo "refresh.sh: recording $name" >&2
  # Input stays open after the last request until the slowest call (a one-second report) is done.
  { cat "$session"; sleep 5; } |
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.callgrind" \
      "$bin" mcp > "$work/$name.out" 2> "$work/$name.log"
done
# Function names as callgrind first gives them (`fn=(id) name`, `cfn=(id) name`), first seen
# first, kept if the binary defines them (libc's and the loader's are not ours to place).
sed -n 's/^c\{0,1\}fn=([0-9]*) //p' "$work"/*.callgrind |
  awk '!seen[$0]++' |
  awk 'NR == FNR { defined[$1] = 1; next } $0 in defined' "$work/defined" - > "$list"
report "$list"
