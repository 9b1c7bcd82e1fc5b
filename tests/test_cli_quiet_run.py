"""`run` prints its summary and its progress, and Dagster's log only with --verbose."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DAGSTER_LINE = re.compile(r" - dagster - (DEBUG|INFO|WARNING|ERROR) - ")


def run(example: Path, home: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`n8n-deepeval run` of three runs of the example, in a process of its own."""
    env = {**os.environ, "N8N_DEEPEVAL_HOME": str(home), "DEEPEVAL_POOL_SIZE": "1"}
    env.pop("DAGSTER_HOME", None)
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(example)]
    return subprocess.run(
        [*command, "--filter", "refund", *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_run_says_its_summary_and_progress_and_dagsters_log_only_when_verbose(
    example_copy, tmp_path
):
    quiet = run(example_copy, tmp_path / "home")
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "runs 3 · pass rate" in quiet.stdout  # the summary
    # 3 runs × 7 metrics, said by the scoring step as it goes
    assert "chunk c01_of_01: scored 21/21 · dry-run: up to" in quiet.stderr
    said = (quiet.stdout + quiet.stderr).splitlines()
    assert [line for line in said if DAGSTER_LINE.search(line)] == []
    assert quiet.stderr.splitlines()[0] == "running support_agent for workflow f7ee35b359b4 …"

    verbose = run(example_copy, tmp_path / "home", "--verbose")
    assert verbose.returncode == 0, verbose.stderr[-2000:]
    assert "runs 3 · pass rate" in verbose.stdout
    logged = [line for line in verbose.stderr.splitlines() if DAGSTER_LINE.search(line)]
    assert any("- WARNING -" in line and "dry-run judge" in line for line in logged)
    assert any("chunk c01_of_01: scored 21/21" in line for line in logged)
    # the progress line is said once, by Dagster's log
    assert not any(
        line.startswith("chunk c01_of_01: scored") for line in verbose.stderr.splitlines()
    )
