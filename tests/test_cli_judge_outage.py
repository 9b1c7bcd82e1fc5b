"""A run whose judge is down says so, and exits with its own code."""

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLE

pytestmark = pytest.mark.slow


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def _run(tmp_path, *options):
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
        "DAGSTER_HOME": str(tmp_path / "home" / "dagster"),
        "DEEPEVAL_POOL_SIZE": "1",  # one worker: exactly 3 calls fail before the circuit opens
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": f"http://127.0.0.1:{_closed_port()}/v1",
        "N8N_DEEPEVAL_JUDGE_MAX_ATTEMPTS": "1",
        "N8N_DEEPEVAL_JUDGE_BREAKER_THRESHOLD": "3",
    }
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run"]
    return subprocess.run(
        [*command, str(EXAMPLE / "benchmark.yaml"), *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_dead_judge_is_an_incomplete_run_not_a_success(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 3, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # helpfulness and bias (27 runs each) needed the judge: 54 scores have no judgement
    assert "(leaves out 54 unjudged scores in 27 runs)" in lines[1]
    warning = next(line for line in lines if line.startswith("WARNING: INCOMPLETE RUN"))
    assert warning.startswith("WARNING: INCOMPLETE RUN: 54 of 189 scores have no judgement")
    assert "judge_unavailable" in warning and "judge_error 3" in warning
    assert "the judge was unreachable" in done.stdout
    assert "incomplete: the judge was unavailable for 51 scores" in done.stderr

    as_json = _run(tmp_path, "--json", "--max-error-rate", "0.5")
    assert as_json.returncode == 0  # 28.6% unjudged is within the allowed 50%
    errors = json.loads(as_json.stdout)["errors"]
    assert errors["by_kind"] == {"judge_unavailable": 51, "missing_input": 7, "judge_error": 3}
    assert (errors["unjudged"], errors["judge_outage"], errors["scores"]) == (54, 51, 189)
    assert "connect" in errors["first_message"]["judge_error"].lower()
