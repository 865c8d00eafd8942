#!/usr/bin/env bash
# Installs the optional non-Rust contenders: the official Python SDK (PyPI `mcp`) into
# bench/.venv and the official TypeScript SDK (npm `@modelcontextprotocol/sdk`) into
# bench/node_modules. Neither is committed. Safe to rerun; a contender that cannot be
# installed is skipped by run.sh with a note.
set -uo pipefail
cd "$(dirname "$0")"

PY_MCP_VERSION=2.3.0
TS_SDK_VERSION=1.32.2
ZOD_VERSION=4.6.7

status=0
if command -v python3 >/dev/null; then
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv || status=1
  fi
  if [ -x .venv/bin/python ] && ! .venv/bin/python -c "import mcp.server.mcpserver" 2>/dev/null; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION" || status=1
  fi
else
  echo "setup.sh: no python3; the Python contender will be skipped" >&2
fi

if command -v npm >/dev/null; then
  if [ ! -d node_modules/@modelcontextprotocol/sdk ]; then
    npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/sdk@$TS_SDK_VERSION" "zod@$ZOD_VERSION" || status=1
  fi
else
  echo "setup.sh: no npm; the TypeScript contender will be skipped" >&2
fi
exit $status
