#!/usr/bin/env bash
# Build cost of the macros: generates a crate with N `#[carmy::tool]` functions and one with N
# equivalent rmcp `#[tool]` methods (same input/output structs, same bodies, both serving
# stdio), prebuilds their dependencies, then times builds of each crate alone:
#   - clean: `cargo clean -p <crate>` then `cargo build` (debug and release);
#   - touch: `touch src/main.rs` then `cargo build` (debug, incremental: the edit loop).
#
#   bench/build-cost.sh            # N=200, 3 runs of each
#   TOOLS=50 RUNS=1 bench/build-cost.sh
#   PROFILES=debug bench/build-cost.sh   # skip release (its dependency prebuild is the slow part)
#
# Writes bench/results/<date>-build-cost.md. Waits while other builds (rustc) run, since they
# share the cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="${TOOLS:-200}"
RUNS="${RUNS:-3}"
PROFILES="${PROFILES:-debug release}"
WAIT="${WAIT:-600}" # most seconds to wait for other builds before each timed build
work="$root/target/build-cost"
export CARGO_TARGET_DIR="$work/target"
mkdir -p "$work"

wait_quiet() {
  local waited=0
  while pgrep -x rustc >/dev/null && [ "$waited" -lt "$WAIT" ]; do
    [ "$waited" = 0 ] && echo "build-cost.sh: waiting for other builds to finish" >&2
    sleep 2
    waited=$((waited + 2))
  done
}

# The input and output structs of tool $1, identical in both crates.
structs() {
  cat <<RS
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Input$1 {
    /// What to look for.
    pub query: String,
    /// How many results at most.
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output$1 {
    /// The results.
    pub items: Vec<String>,
    /// How many there are.
    pub total: u32,
}
RS
}

gen_carmy() {
  local dir="$work/carmy_tools"
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<TOML
[package]
name = "carmy_tools"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
carmy = { path = "$root/carmy" }
schemars = { version = "1.0", default-features = false, features = ["derive", "std"] }
serde = { version = "1.0.219", features = ["derive"] }
tokio = { version = "1.45", features = ["rt-multi-thread", "macros"] }

[workspace]
TOML
  {
    echo "use carmy::prelude::*;"
    echo "use schemars::JsonSchema;"
    echo "use serde::{Deserialize, Serialize};"
    for i in $(seq 0 $((TOOLS - 1))); do
      echo
      structs "$i"
      cat <<RS

/// Tool $i: look things up.
#[tool(effect = "read")]
pub async fn tool_$i(input: Input$i) -> Result<Output$i, AgentError> {
    Ok(Output$i { total: input.limit.unwrap_or(1), items: vec![input.query] })
}
RS
    done
    echo
    echo "#[tokio::main]"
    echo "async fn main() -> Result<(), Box<dyn std::error::Error>> {"
    echo "    let runtime = Carmy::new()"
    for i in $(seq 0 $((TOOLS - 1))); do echo "        .tool(tool_$i)"; done
    echo "        .build()?;"
    echo "    carmy::mcp::McpServer::new(runtime).serve_stdio().await?;"
    echo "    Ok(())"
    echo "}"
  } >"$dir/src/main.rs"
}

gen_rmcp() {
  local dir="$work/rmcp_tools"
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<TOML
[package]
name = "rmcp_tools"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = { version = "3.11", default-features = false, features = ["server", "macros", "transport-io"] }
schemars = { version = "1.0", default-features = false, features = ["derive", "std"] }
serde = { version = "1.0.219", features = ["derive"] }
tokio = { version = "1.45", features = ["rt-multi-thread", "macros"] }

[workspace]
TOML
  {
    cat <<'RS'
use rmcp::{
    ErrorData, Json, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone)]
pub struct Tools {
    tool_router: ToolRouter<Self>,
}
RS
    for i in $(seq 0 $((TOOLS - 1))); do
      echo
      structs "$i"
    done
    echo
    echo "#[tool_router]"
    echo "impl Tools {"
    echo "    fn new() -> Self {"
    echo "        Self { tool_router: Self::tool_router() }"
    echo "    }"
    for i in $(seq 0 $((TOOLS - 1))); do
      cat <<RS

    /// Tool $i: look things up.
    #[tool(annotations(read_only_hint = true))]
    async fn tool_$i(&self, Parameters(input): Parameters<Input$i>) -> Result<Json<Output$i>, ErrorData> {
        Ok(Json(Output$i { total: input.limit.unwrap_or(1), items: vec![input.query] }))
    }
RS
    done
    cat <<'RS'
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    Tools::new().serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
RS
  } >"$dir/src/main.rs"
}

gen_carmy
gen_rmcp
for crate in carmy_tools rmcp_tools; do
  # Same dependency versions as the workspace, where it has a lock file.
  [ -f "$root/Cargo.lock" ] && cp "$root/Cargo.lock" "$work/$crate/Cargo.lock"
done

# Seconds for one `cargo build` of the crate in $1 with extra args $2..
time_build() {
  local dir="$1"
  shift
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && cargo build --quiet "$@")
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

declare -A results
for profile in $PROFILES; do
  flag=()
  [ "$profile" = release ] && flag=(--release)
  for crate in carmy_tools rmcp_tools; do
    echo "build-cost.sh: prebuilding the dependencies of $crate ($profile)" >&2
    (cd "$work/$crate" && cargo build --quiet "${flag[@]}")
  done
  for run in $(seq 1 "$RUNS"); do
    for crate in carmy_tools rmcp_tools; do
      (cd "$work/$crate" && cargo clean --quiet -p "$crate" "${flag[@]}")
      wait_quiet
      t=$(time_build "$work/$crate" "${flag[@]}")
      echo "build-cost.sh: $crate $profile clean build, run $run: ${t}s" >&2
      results[$crate-$profile-clean]+="$t "
      if [ "$profile" = debug ]; then
        touch "$work/$crate/src/main.rs"
        wait_quiet
        t=$(time_build "$work/$crate")
        echo "build-cost.sh: $crate debug touch rebuild, run $run: ${t}s" >&2
        results[$crate-debug-touch]+="$t "
      fi
    done
  done
done

row() {
  local crate="$1" label="$2"
  local cells=()
  for key in debug-clean debug-touch release-clean; do
    local values="${results[$crate-$key]-}"
    if [ -z "$values" ]; then
      cells+=("not run")
      continue
    fi
    cells+=("$(echo "$values" | tr ' ' '\n' | grep . | median | xargs printf '%.1f') ($(echo "$values" | xargs -n1 printf '%.1f ' | sed 's/ $//'))")
  done
  echo "| $label | ${cells[0]} | ${cells[1]} | ${cells[2]} |"
}

stamp="$(date +%F)"
out="$root/bench/results/$stamp-build-cost.md"
mkdir -p "$root/bench/results"
{
  echo "# Build cost of $TOOLS tools, $stamp"
  echo
  echo "Rerun: \`TOOLS=$TOOLS RUNS=$RUNS PROFILES='$PROFILES' bench/build-cost.sh\`"
  echo
  echo "- cores: $(nproc); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); kernel: $(uname -sr)"
  echo "- $(rustc --version); commit $(cd "$root" && git rev-parse --short HEAD)"
  echo
  echo "Seconds to build the generated crate alone (its dependencies prebuilt), median of $RUNS"
  echo "(each run in parentheses). *clean*: after \`cargo clean -p\`; *touch*: after touching"
  echo "\`src/main.rs\`, with the incremental cache (the edit loop)."
  echo
  echo "| crate | debug clean (s) | debug touch (s) | release clean (s) |"
  echo "|---|--:|--:|--:|"
  row carmy_tools "$TOOLS \`#[carmy::tool]\` fns + \`carmy::mcp\` stdio"
  row rmcp_tools "$TOOLS rmcp \`#[tool]\` methods + \`#[tool_router]\` stdio"
  echo
  echo "Both crates have the same $TOOLS input/output structs (serde + schemars derives) and bodies;"
  echo "the generator is \`bench/build-cost.sh\`, the crates land in \`target/build-cost/\`."
  if pgrep -x rustc >/dev/null; then
    echo
    echo "Note: other builds were running on the machine at the end; figures may be inflated."
  fi
} >"$out"
echo "build-cost.sh: wrote $out" >&2
cat "$out"
