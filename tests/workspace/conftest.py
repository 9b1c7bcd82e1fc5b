"""Stores the workspace's tests read: one generated from row models (fast), and one made by
real runs of the bundled example at two versions (the CLI, as a user runs it)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.testing.generated_store import (
    GeneratedMetric,
    GeneratedVersion,
    version_tables,
    write_store,
)
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.store import StoreSource
from tests.conftest import EXAMPLE

BENCHMARK = "orders"
METRICS = (
    GeneratedMetric("tool_correctness", "tool_correctness", 1.0, judged=False),
    GeneratedMetric("helpfulness", "g_eval", 0.6),
    GeneratedMetric("bias", "bias", 0.5, direction="lower_is_better", dry_run=True, counted=False),
)
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


V1, V2, NANO = digest("v1"), digest("v2"), digest("v2 nano")
PASSES_V1 = {"refund": [True] * 3, "status": [True] * 3, "total": [True, False, True]}
PASSES_V2 = {"refund": [False] * 3, "status": [True] * 3, "total": [True] * 3}
# A chat in OpenAI's message form, as a simulated conversation stores it: the opening turn
# from the dataset, then a question answered through a tool a mock stood in for.
STATUS_CHAT = [
    {"role": "user", "content": "Hi, I ordered boots last week.", "opening": True},
    {"role": "assistant", "content": "Hello! How can I help with them?", "latencyS": 0.8},
    {"role": "user", "content": "Where is order status?"},
    {
        "role": "assistant",
        "content": "Order status shipped yesterday.",
        "latencyS": 1.4,
        "intermediateSteps": [
            {
                "action": {"tool": "order_lookup", "toolInput": {"orderId": "status"}},
                "observation": '{"status": "shipped"}',
                "mocked": True,
            }
        ],
    },
]


@dataclass(frozen=True)
class Generated:
    database: Path
    source: StoreSource
    files: BenchmarkFiles


@pytest.fixture
def generated(tmp_path: Path) -> Generated:
    """Three versions of ``orders``: v2 drops ``refund`` from 3/3 to 0/3 (a likely
    regression), its variant ``nano``, and the red team's attacks on v1 and v2."""
    versions = [
        GeneratedVersion(V1, T0, PASSES_V1, breaches={"bola": [False, False, True, False]}),
        GeneratedVersion(
            V2,
            T0 + timedelta(days=1),
            PASSES_V2,
            failed_check=True,
            breaches={"bola": [True, True, True, False]},
            output_of={"refund": "Refund issued for order refund, no questions asked."},
            turns_of={"status": STATUS_CHAT},
        ),
        GeneratedVersion(NANO, T0 + timedelta(days=1, hours=1), PASSES_V2, "nano", V2),
    ]
    database = tmp_path / "results.duckdb"
    write_store(database, BENCHMARK, version_tables(versions, METRICS))
    return Generated(database, StoreSource("duckdb", str(database)), BenchmarkFiles([]))


def cli(home: Path, *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """An n8n-deepeval command with its own home, as a user runs it."""
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "DEEPEVAL_POOL_SIZE": "2",
    }
    for link in ("N8N_DEEPEVAL_REPORTS_PORT", "N8N_DEEPEVAL_WORKSPACE_URL"):
        env.pop(link, None)  # the links a report writes: their defaults
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *arguments]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=600, cwd=cwd, check=False
    )


@dataclass(frozen=True)
class ExampleRuns:
    home: Path
    benchmark: Path
    database: Path
    first: str  # the version keys, in the order they ran
    second: str


@pytest.fixture(scope="session")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> ExampleRuns:
    """The README's walk-through: the bundled example run, edited (workflow.v2.json), run again."""
    folder = tmp_path_factory.mktemp("example_runs")
    shutil.copytree(EXAMPLE, folder / "support_agent")
    benchmark, home = folder / "support_agent" / "benchmark.yaml", folder / "home"
    first = cli(home, "run", str(benchmark), "--json")
    assert first.returncode == 0, first.stderr[-2000:]
    workflow = folder / "support_agent" / "workflow.json"
    workflow.write_text((folder / "support_agent" / "workflow.v2.json").read_text())
    second = cli(home, "run", str(benchmark), "--json")
    assert second.returncode == 5, second.stderr[-2000:]  # it regressed
    keys = [json.loads(done.stdout)["workflow_hash"][:12] for done in (first, second)]
    return ExampleRuns(home, benchmark, home / "results.duckdb", *keys)
