#!/usr/bin/env bash
# Installs the database servers that Carmy's store tests run for real: PostgreSQL and Redis,
# from Debian's packages. Nothing is started here: each test starts servers of its own on
# loopback (tests/servers), as the postgres user where PostgreSQL needs one.
#
#   bash scripts/services.sh     # idempotent: installs only what is missing
set -euo pipefail

have_postgres() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }
have_redis() { command -v redis-server >/dev/null; }

packages=()
have_postgres || packages+=(postgresql)
have_redis || packages+=(redis-server)
if [[ ${#packages[@]} -eq 0 ]]; then
  echo "==> services: PostgreSQL and Redis are installed"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
echo "==> services: apt-get install ${packages[*]}"
# The packages would start their own system-wide servers; the tests need none of them.
policy=/usr/sbin/policy-rc.d
made_policy=
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod +x "$policy"
  made_policy=1
fi
trap '[[ -n $made_policy ]] && "${sudo[@]}" rm -f "$policy"' EXIT
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${packages[@]}" >/dev/null
have_postgres || { echo "error: PostgreSQL is still missing after installing it" >&2; exit 1; }
have_redis || { echo "error: redis-server is still missing after installing it" >&2; exit 1; }
echo "==> services: installed ${packages[*]}"
