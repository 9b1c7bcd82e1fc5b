"""Commands that only read a file or print start without Dagster, SciPy or DeepEval."""

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import n8n_deepeval_pipeline
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
], "models": [name for name in sys.modules if name.startswith(
    ("n8n_deepeval_pipeline.benchmark", "n8n_deepeval_pipeline.metrics")
)]}))
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
    imported = _imported_after(*args, env=no_n8n_env)
    assert (imported["code"], imported["heavy"]) == (0, [])
    if args == ["--help"]:  # nor the benchmark models and the catalog (0.7 s to build)
        assert imported["models"] == []
    else:
        assert "n8n_deepeval_pipeline.metrics.catalog" in imported["models"]


@pytest.mark.parametrize("args", [["dataset", "synthesize", "--help"], ["init", "--help"]])
def test_synthesis_help_imports_neither_dagster_scipy_nor_deepeval(args, no_n8n_env):
    # DeepEval's Synthesizer runs in a process of its own, never in the CLI's.
    assert _imported_after(*args, env=no_n8n_env)["heavy"] == []


def _typed_names() -> dict[str, str]:
    """The facade's names and their modules, as its type stub gives them."""
    stub = Path(n8n_deepeval_pipeline.__file__).with_suffix(".pyi")
    return {
        alias.name: f"n8n_deepeval_pipeline.{node.module}"
        for node in ast.parse(stub.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_every_name_of_the_facade_is_the_one_its_type_stub_names():
    typed = _typed_names()
    assert len(typed) == 19
    assert sorted(n8n_deepeval_pipeline.__all__) == sorted(typed)
    for name, module in typed.items():
        assert getattr(n8n_deepeval_pipeline, name) is getattr(
            importlib.import_module(module), name
        ), name
    with pytest.raises(AttributeError, match="Pipeline"):
        n8n_deepeval_pipeline.Pipeline  # noqa: B018


def test_validate_of_a_benchmark_of_files_imports_none_of_them(no_n8n_env):
    imported = _imported_after("validate", str(EXAMPLE / "benchmark.yaml"), env=no_n8n_env)
    assert (imported["code"], imported["heavy"]) == (0, [])  # its failOn check needs no SciPy
    # an n8n configured in the environment is not reached for a benchmark of files
    configured = {**no_n8n_env, "N8N_API_URL": "http://127.0.0.1:9", "N8N_API_KEY": "k"}
    again = _imported_after("validate", str(EXAMPLE / "benchmark.yaml"), env=configured)
    assert again["code"] == 0 and "dagster" not in again["heavy"]
