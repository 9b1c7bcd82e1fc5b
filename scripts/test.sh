#!/usr/bin/env bash
# Lint, type-check, build the docs site and run the whole test suite (slow tests included).
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not slow".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
ruff format --check .
ruff check .
mypy
lint-imports
# The docs site (./site): a broken link or anchor, or a page left out of the nav, fails it.
# The two variables quiet the notices two of its plugins print about MkDocs' future.
NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true mkdocs build --strict --quiet
pytest "$@"
