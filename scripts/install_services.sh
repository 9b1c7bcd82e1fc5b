#!/usr/bin/env bash
# Install PostgreSQL and Redis from the distribution's packages, for the live test of the
# distributed profile (tests/live/test_distributed.py starts its own servers from them on
# loopback; no service is enabled or started here). Does nothing when both are there.
set -euo pipefail
have_postgres() { compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; }
have_redis() { command -v redis-server >/dev/null; }
have_postgres && have_redis && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends postgresql redis-server >/dev/null
have_postgres && have_redis
