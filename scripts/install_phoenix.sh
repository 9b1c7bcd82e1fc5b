#!/usr/bin/env bash
# Install Arize Phoenix (a local OpenTelemetry receiver with a UI and a span API) into a
# virtual environment of its own, for the live test of the trace export.
#
#   scripts/install_phoenix.sh              install if needed, then print the install folder
#   scripts/install_phoenix.sh --print-dir  print the install folder; exit 1 if incomplete
#
# Phoenix brings its own pins (protobuf, SQLAlchemy, pandas…) that the project's (Dagster
# needs protobuf < 7) need not share: it runs as a separate server process, from its own
# virtual environment, never imported by the project.
#
# Layout of the install folder:
#   bin/phoenix     Phoenix's command (`phoenix serve`)
#   .complete       stamp written last; while it is present nothing is redone
#
# Progress goes to stderr; the folder path is the only line written to stdout.
set -euo pipefail

PHOENIX_VERSION="20.26.1"
cache="${N8N_DEEPEVAL_PHOENIX_CACHE:-$HOME/.cache/n8n-deepeval}"
dir="$cache/phoenix-$PHOENIX_VERSION"
stamp="$dir/.complete"
stamp_text="arize-phoenix==$PHOENIX_VERSION"
python="${PYTHON:-python3}"

say() { echo "install_phoenix: [$((SECONDS - start)) s] $*" >&2; }

is_complete() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] && [ -x "$dir/bin/phoenix" ]
}

if [ "${1:-}" = "--print-dir" ]; then
  is_complete || { echo "Phoenix is not installed in $dir; run $0" >&2; exit 1; }
  echo "$dir"
  exit 0
fi

mkdir -p "$cache"
# Serialise concurrent installers (e.g. two test sessions starting at once) on one lock file.
exec 9>"$cache/.phoenix-$PHOENIX_VERSION.lock"
flock 9

start=$SECONDS
if ! is_complete; then
  # A half-finished earlier attempt is not trusted: start again from an empty folder.
  rm -rf "$dir"
  say "arize-phoenix==$PHOENIX_VERSION -> $dir"
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    "arize-phoenix==$PHOENIX_VERSION" >&2
  # Fail now, not at server start, if the server cannot be imported.
  "$dir/bin/python" -c "import phoenix.server.main" >&2
  echo "$stamp_text" >"$stamp"
  say "done"
fi

echo "$dir"
