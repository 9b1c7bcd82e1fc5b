#!/usr/bin/env bash
# Run the bundled support-agent benchmark end to end on embedded defaults
# (local Dagster instance and DuckDB under ./.n8n-deepeval, recorded outputs, dry-run judge);
# `run` ends by saying where its report is.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
# An optional first argument names another benchmark file, e.g. a kitchen sink.
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then file="$1"; shift; else file=examples/support_agent/benchmark.yaml; fi
exec n8n-deepeval run "$file" "$@"
