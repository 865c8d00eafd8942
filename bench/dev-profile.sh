#!/usr/bin/env bash
# What `[profile.dev.package."*"] debug = false` (README, "Using Carmy in your own crate") saves a
# crate that depends on Carmy: builds examples/minimal's `main` as a crate of its own, outside this
# workspace (so Carmy's crates are dependencies, as in a user's crate), twice from clean — once
# with the default dev profile, once with the tip — and prints the debug binary's size, the
# target directory's size and the build's wall time.
#
#   bench/dev-profile.sh
#
# Writes bench/results/<date>-dev-profile.md. Uses the registry cache (`--offline`): run a build
# of this workspace first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/target/dev-profile"
rm -rf "$work"
mkdir -p "$work/src"
cp "$root/examples/minimal/src/main.rs" "$work/src/"
cp "$root/Cargo.lock" "$work/"
manifest() {
  cat <<TOML
[package]
name = "devsize"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
carmy = { path = "$root/carmy" }
schemars = "1"
serde = { version = "1", features = ["derive"] }

[workspace]
TOML
}

measure() {
  local label=$1 target="$work/target-$2"
  local started
  started=$SECONDS
  CARGO_TARGET_DIR="$target" cargo build --offline --quiet --manifest-path "$work/Cargo.toml"
  printf '| %s | %s MB | %s | %d s |\n' "$label" \
    "$(stat -c %s "$target/debug/devsize" | awk '{ printf "%.1f", $1 / 1e6 }')" \
    "$(du -sh "$target" | cut -f1)" "$((SECONDS - started))"
}

out="$root/bench/results/$(date +%F)-dev-profile.md"
{
  echo "# Debug builds of a crate depending on Carmy: the dev-profile tip"
  echo
  echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(rustc --version)."
  echo "Command: \`bench/dev-profile.sh\` (examples/minimal's main as a crate outside the workspace)."
  echo
  echo '| dev profile | debug binary | target directory | clean build |'
  echo '|---|---|---|---|'
  manifest >"$work/Cargo.toml"
  measure 'default' default
  manifest >"$work/Cargo.toml"
  printf '\n[profile.dev.package."*"]\ndebug = false\n' >>"$work/Cargo.toml"
  measure '`[profile.dev.package."*"] debug = false`' tip
} | tee "$out"
rm -rf "$work"
