#!/usr/bin/env bash
# Lint, type-check and run the whole test suite (slow tests included).
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not slow".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
ruff format --check .
ruff check .
mypy
lint-imports
pytest "$@"
