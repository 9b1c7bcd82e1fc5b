#!/usr/bin/env bash
# Create ./.venv (Python 3.11 or 3.12) and install the project with pinned dependencies.
# Sourced by the other scripts; re-running it is cheap once the venv is up to date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${N8N_DEEPEVAL_VENV:-$root/.venv}"
stamp="$venv/.installed-$(cat "$root/pyproject.toml" "$root/constraints.txt" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  python="${PYTHON:-python3}"
  "$python" -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 13), "Python 3.11 or 3.12 is needed"'
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -c "$root/constraints.txt" -e "$root[dev]"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
