"""Commands that only read a file or print start without Dagster, SciPy or DeepEval."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLE

_CHILD = """
import json, sys
from n8n_deepeval_pipeline.cli import main
code = None
try:
    main(sys.argv[1:], prog_name="n8n-deepeval")
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "heavy": [
    name for name in ("dagster", "scipy", "deepeval") if name in sys.modules
]}))
"""


def _imported_after(*args: str, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def no_n8n_env():
    return {k: v for k, v in os.environ.items() if k not in ("N8N_API_URL", "N8N_API_KEY")}


@pytest.mark.parametrize("args", [["--help"], ["metrics"], ["metrics", "--json"]])
def test_help_and_metrics_import_neither_dagster_scipy_nor_deepeval(args, no_n8n_env):
    assert _imported_after(*args, env=no_n8n_env) == {"code": 0, "heavy": []}


def test_validate_of_a_benchmark_of_files_imports_none_of_them(no_n8n_env):
    imported = _imported_after("validate", str(EXAMPLE / "benchmark.yaml"), env=no_n8n_env)
    assert imported == {"code": 0, "heavy": []}  # its failOn check needs no SciPy
    # an n8n configured in the environment is not reached for a benchmark of files
    configured = {**no_n8n_env, "N8N_API_URL": "http://127.0.0.1:9", "N8N_API_KEY": "k"}
    again = _imported_after("validate", str(EXAMPLE / "benchmark.yaml"), env=configured)
    assert again["code"] == 0 and "dagster" not in again["heavy"]
