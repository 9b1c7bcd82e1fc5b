#!/usr/bin/env bash
# Run the bundled support-agent benchmark end to end on embedded defaults
# (local Dagster instance and DuckDB under ./.n8n-deepeval, recorded outputs, dry-run judge),
# then say where its report is.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/bootstrap.sh"
cd "$root"
# An optional first argument names another benchmark file, e.g. a kitchen sink.
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then file="$1"; shift; else file=examples/support_agent/benchmark.yaml; fi
started="$(mktemp)"  # the report this run writes is the one newer than this
status=0
n8n-deepeval run "$file" "$@" || status=$?
report="$(find "${N8N_DEEPEVAL_HOME:-.n8n-deepeval}/reports" -name report.html -newer "$started" 2>/dev/null | head -n 1)"
rm -f "$started"
if [ -n "$report" ]; then
  echo
  echo "report: $report (open it in a browser; n8n-deepeval report FILE --out DIR writes a copy)"
fi
exit "$status"
