"""The judge-call cache across whole benchmark runs (one killed half-way), and secret hygiene."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import EXAMPLE, loopback_judge_environment

pytestmark = pytest.mark.slow
API_KEY = "sk-test-SECRET-7f3a9c"
URL_TOKEN = "URLTOKEN-5d21e8"


@pytest.fixture
def judge():
    server = LoopbackJudge(latency_s=0.02).start()
    yield server
    server.stop()


def environment(home: Path, server: LoopbackJudge) -> dict[str, str]:
    return {
        **os.environ,
        **loopback_judge_environment(home, f"{server.base_url}?token={URL_TOKEN}"),
        "N8N_DEEPEVAL_JUDGE_API_KEY": API_KEY,
    }


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *args]


def run_example(env: dict[str, str]) -> tuple[dict, str]:
    done = subprocess.run(
        cli("run", str(EXAMPLE / "benchmark.yaml"), "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout), done.stdout + done.stderr


def cached_answers(home: Path) -> int:
    with sqlite3.connect(home / "judge" / "judge.sqlite") as db:
        return db.execute("select count(*) from cache").fetchone()[0]


def test_second_run_makes_no_judge_call_and_nothing_leaks(judge, tmp_path):
    home = tmp_path / "home"
    env = environment(home, judge)
    first, log_one = run_example(env)
    calls = judge.requests
    assert calls > 0 and first["judge_calls"] == calls
    assert first["judge_label"] == "openai-compatible:gpt-4o-mini"
    assert first["cost_usd"] > 0 and first["tokens"] > 0
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        per_run = db.execute(
            "select sum(judge_calls), sum(tokens), sum(cost_usd) from support_agent.run_aggregates"
        ).fetchone()
    assert per_run[0] == calls and per_run[1] == first["tokens"]
    assert per_run[2] == pytest.approx(first["cost_usd"])
    second, log_two = run_example(env)
    assert judge.requests == calls  # every answer came from the cache
    assert second["judge_calls"] == 0
    assert second["cached_calls"] == first["judge_calls"] + first["cached_calls"]
    assert second["metrics"] == first["metrics"]

    # the secrets were really used ...
    assert any(h.get("authorization") == f"Bearer {API_KEY}" for h in judge.headers_seen)
    assert all(URL_TOKEN in url for url in judge.urls_seen)
    # ... and appear nowhere the pipeline writes
    for text in (log_one, log_two):
        assert API_KEY not in text and URL_TOKEN not in text
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert API_KEY.encode() not in data, path
            assert URL_TOKEN.encode() not in data, path
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        per_run = db.execute(
            "select sum(judge_calls), sum(tokens), sum(cost_usd) from support_agent.run_aggregates"
        ).fetchone()
        per_score = db.execute(
            "select sum(judge_calls), sum(tokens), sum(cost_usd) from support_agent.metric_scores"
        ).fetchone()
        # the stored partition is the second run's: answered from the cache, it cost nothing
        assert per_run[:2] == per_score[:2] == (0, 0)
        assert (per_run[2] or 0.0) == (per_score[2] or 0.0) == 0.0
        tables = db.execute(
            "select table_schema, table_name from information_schema.tables"
        ).fetchall()
        for schema, table in tables:
            rows = db.execute(f'select * from "{schema}"."{table}"').fetchall()
            text = json.dumps(rows, default=str)
            assert API_KEY not in text and URL_TOKEN not in text, table


def test_a_killed_run_restarted_makes_exactly_the_missing_calls(judge, tmp_path):
    reference = LoopbackJudge(latency_s=0.0).start()
    try:
        run_example(environment(tmp_path / "reference", reference))
        total = reference.requests
    finally:
        reference.stop()

    home = tmp_path / "home"
    env = environment(home, judge)
    process = subprocess.Popen(
        cli("run", str(EXAMPLE / "benchmark.yaml")),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while judge.requests < total // 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    made_before = judge.requests
    assert 0 < made_before < total
    kept = cached_answers(home)

    summary, _ = run_example(env)
    assert judge.requests - made_before == total - kept
    assert summary["runs"] == 27


def test_a_judge_that_echoes_the_key_gets_it_stored_and_shown_nowhere(tmp_path):
    server = LoopbackJudge(latency_s=0.0, reject_key=True).start()
    home = tmp_path / "home"
    try:
        done = subprocess.run(
            cli("run", str(EXAMPLE / "benchmark.yaml")),
            env=environment(home, server),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        server.stop()
    assert server.headers_seen[0]["authorization"] == f"Bearer {API_KEY}"  # quoted back
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        errors = [
            error
            for (error,) in db.execute(
                "select error from support_agent.metric_scores where error_kind like 'judge%'"
            ).fetchall()
        ]
    assert len(errors) == 54  # every judge-backed score of the 27 runs
    assert all("HTTP 401 Invalid key: Bearer [redacted] (request " in e for e in errors)
    for text in [*errors, done.stdout + done.stderr]:
        assert API_KEY not in text and URL_TOKEN not in text
    for path in home.rglob("*"):  # the judge state file, the tables, the run logs
        if path.is_file():
            data = path.read_bytes()
            assert API_KEY.encode() not in data and URL_TOKEN.encode() not in data, path


def test_the_judge_spend_after_kills_counts_every_call_the_judge_answered(judge, tmp_path):
    reference = LoopbackJudge(latency_s=0.0).start()
    try:
        clean, _ = run_example(environment(tmp_path / "reference", reference))
    finally:
        reference.stop()

    home = tmp_path / "home"
    env = environment(home, judge)
    for fraction in (0.3, 0.6):  # killed twice, at 30% and 60% of the calls a run makes
        process = subprocess.Popen(
            cli("run", str(EXAMPLE / "benchmark.yaml")),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 300
        while judge.requests < clean["judge_calls"] * fraction and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    asked = judge.requests
    resumed, _ = run_example(env)
    attempts = resumed["attempts"]
    assert len(attempts) >= 2  # the killed attempts are there beside the last one
    every = sum(spend["judge_calls"] for spend in attempts.values())
    # every answer the judge gave, whichever attempt got it: no fewer than a clean run's,
    # no more than the judge was asked (a call in flight at the kill was never answered)
    assert clean["judge_calls"] <= every <= judge.requests
    assert judge.requests - asked == attempts[resumed["run_id"]]["judge_calls"]
    cost = sum(spend["cost_usd"] or 0.0 for spend in attempts.values())
    assert cost >= clean["cost_usd"] * 0.999
