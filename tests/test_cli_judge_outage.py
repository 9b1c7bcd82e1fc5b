"""A run whose judge is down, refuses its key or fails too often says so, and exits 3."""

import json
import os
import socket
import subprocess
import sys

import dagster as dg
import pytest
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import EXAMPLE

pytestmark = pytest.mark.slow


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def _run(tmp_path, *options, judge_url=None, **settings):
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
        "DAGSTER_HOME": str(tmp_path / "home" / "dagster"),
        # one evaluation at a time: exactly 3 calls fail before the circuit opens
        "DEEPEVAL_POOL_SIZE": "1",
        "N8N_DEEPEVAL_EVALUATIONS_PER_WORKER": "1",
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": judge_url or f"http://127.0.0.1:{_closed_port()}/v1",
        "N8N_DEEPEVAL_JUDGE_MAX_ATTEMPTS": "1",
        "N8N_DEEPEVAL_JUDGE_BREAKER_THRESHOLD": "3",
        **settings,
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


def _error_rate_checks(tmp_path, monkeypatch) -> list[tuple[bool, float]]:
    """Whether each run's error_rate check passed, and the limit it held, oldest first."""
    key = dg.AssetCheckKey(dg.AssetKey(["support_agent", "metric_scores"]), "error_rate")
    home = tmp_path / "home" / "dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the instance's storage names it
    with dg.DagsterInstance.from_config(str(home)) as instance:
        history = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    return [
        (
            record.status == AssetCheckExecutionRecordStatus.SUCCEEDED,
            record.event.asset_check_evaluation.metadata["max_error_rate"].value,
        )
        for record in reversed(history)
    ]


def test_a_dead_judge_is_an_incomplete_run_not_a_success(tmp_path, monkeypatch):
    done = _run(tmp_path)
    assert done.returncode == 3, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # helpfulness and bias (27 runs each) needed the judge: 54 scores have no judgement
    assert "(leaves out 54 unjudged scores in 27 runs)" in lines[1]
    warning = next(line for line in lines if line.startswith("WARNING: INCOMPLETE RUN"))
    assert warning.startswith("WARNING: INCOMPLETE RUN: 54 of 189 scores have no judgement")
    assert "judge_unavailable" in warning and "judge_error 3" in warning
    assert "the judge was unreachable" in done.stdout
    assert (
        "incomplete: 54 of 189 scores have no judgement: the judge failed for 3 (judge_error) "
        "and was unavailable for 51"
    ) in done.stderr

    as_json = _run(tmp_path, "--json", "--max-error-rate", "0.5")
    assert as_json.returncode == 0  # 28.6% unjudged is within the allowed 50%
    errors = json.loads(as_json.stdout)["errors"]
    assert errors["by_kind"] == {"judge_unavailable": 51, "judge_error": 3}
    assert (errors["unjudged"], errors["judge_outage"], errors["scores"]) == (54, 51, 189)
    assert "connect" in errors["first_message"]["judge_error"].lower()
    # the UI's error_rate check says what each run exited with, at the limit that run held
    assert _error_rate_checks(tmp_path, monkeypatch) == [(False, 0.05), (True, 0.5)]


def test_a_failed_error_rate_check_fails_the_run_at_the_same_limit(tmp_path):
    # 14 judge calls fail once each (no retry, no open circuit): 14 of 189 scores unjudged
    server = LoopbackJudge(latency_s=0.0, faults=["500"] * 14).start()
    try:
        done = _run(tmp_path, judge_url=server.base_url, N8N_DEEPEVAL_JUDGE_BREAKER_THRESHOLD="100")
    finally:
        server.stop()
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stderr.splitlines()[-1] == (
        "incomplete: 7.4% of the scores have no judgement (14 of 189), "
        "above checks.maxErrorRate 5.0%"
    )
    assert "WARNING: INCOMPLETE RUN: 14 of 189 scores have no judgement (7.4%: judge_error 14)" in (
        done.stdout.splitlines()
    )


def test_a_judge_that_refuses_the_key_is_named_so_not_unreachable(tmp_path):
    server = LoopbackJudge(latency_s=0.0, reject_key=True).start()
    try:
        done = _run(tmp_path, judge_url=server.base_url)
    finally:
        server.stop()
    assert done.returncode == 3
    assert "the judge refused the key (HTTP 401): give it a valid key and run again" in (
        done.stdout
    )
    assert "unreachable" not in done.stdout + done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "incomplete: 54 of 189 scores have no judgement: the judge refused the key (HTTP 401) for "
    )
