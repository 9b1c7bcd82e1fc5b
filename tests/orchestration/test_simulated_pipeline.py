"""A simulated benchmark end to end: `run` plays a conversation per run and scores it.

The workflow is a webhook target at the loopback chatbot (a test double of an n8n chat
agent with memory and a Calculator tool); the loopback judge plays the users and scores
the conversations with the multi-turn metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import EXAMPLE

pytestmark = pytest.mark.slow
API_KEY = "sk-test-SIMULATION-4b1e0c"
URL_TOKEN = "URLTOKEN-sim-8d0f"
GOLDENS = (
    "id,scenario,expectedOutcome,userDescription\n"
    "mul,What is 6*7,learns 42,a student checking homework\n"
    "weather,Asks about weather,weather told,a hiker planning a trip\n"
)
METRICS = [
    {"metric": "turn_relevancy"},
    {"metric": "knowledge_retention"},
    {"metric": "conversation_completeness"},
    {"metric": "goal_accuracy"},
    {"metric": "tool_use", "availableTools": ["Calculator"]},
]


def write_benchmark(tmp_path: Path, chatbot: LoopbackChatbot, **changes: Any) -> Path:
    (tmp_path / "goldens.csv").write_text(GOLDENS, encoding="utf-8")
    document = {
        "name": "simulated",
        "workflow": str(EXAMPLE / "workflow.json"),
        "dataset": {"path": "goldens.csv"},
        "runsPerRow": 2,
        "target": {
            "type": "n8n_webhook",
            "url": f"{chatbot.url}?token={URL_TOKEN}",
            "maxConcurrency": 8,
        },
        "simulation": {"maxUserTurns": 3},
        "metrics": METRICS,
        **changes,
    }
    path = tmp_path / "simulated.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def cli_env(judge: LoopbackJudge, home: Path) -> dict[str, str]:
    """The environment of a `run` against the loopback judge, in a home of its own."""
    return {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "DEEPEVAL_POOL_SIZE": "2",
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": judge.base_url,
        "N8N_DEEPEVAL_JUDGE_API_KEY": API_KEY,
    }


def run(path: Path, judge: LoopbackJudge, home: Path) -> subprocess.CompletedProcess[str]:
    return cli(judge, home, "run", str(path), "--json")


def cli(judge: LoopbackJudge, home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *arguments]
    return subprocess.run(
        command, env=cli_env(judge, home), capture_output=True, text=True, timeout=900
    )


def stored(home: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        return db.execute(sql).fetchall()


@pytest.fixture
def servers() -> Any:
    judge, chatbot = LoopbackJudge(latency_s=0.01).start(), LoopbackChatbot().start()
    yield judge, chatbot
    judge.stop()
    chatbot.stop()


def test_each_run_is_a_conversation_scored_by_the_multi_turn_metrics(
    servers: Any, tmp_path: Path
) -> None:
    judge, chatbot = servers
    home = tmp_path / "home"
    first = run(write_benchmark(tmp_path, chatbot), judge, home)
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads(first.stdout)
    outputs = stored(
        home,
        "select run_id, session_id, stop_reason, turns, intermediate_steps, actual_output, "
        "simulation, error from simulated.agent_outputs order by run_id",
    )
    assert len(outputs) == 4
    sessions = {row[1] for row in outputs}
    assert len(sessions) == 4  # a memory session per conversation
    assert set(chatbot.memory) == sessions  # the chatbot saw exactly those
    for run_id, session, reason, turns, steps, output, simulation, error in outputs:
        turns, simulation = json.loads(turns), json.loads(simulation)
        assert session.startswith(run_id + ":") and error is None
        assert reason in ("outcome_reached", "turn_limit")
        user_turns = [turn for turn in turns if turn["role"] == "user"]
        answers = [turn for turn in turns if turn["role"] == "assistant"]
        assert len(user_turns) == len(answers) == simulation["userTurns"]
        assert (reason == "turn_limit") == (simulation["userTurns"] == 3)
        # what the chatbot was sent in the session, turn by turn
        assert chatbot.memory[session] == [turn["content"] for turn in user_turns]
        assert output == answers[-1]["content"]
        assert all("latencyS" in turn and "intermediateSteps" in turn for turn in answers)
        if ":mul:" in run_id:  # each turn asked 6*7: the Calculator, turn by turn
            assert all(len(turn["intermediateSteps"]) == 1 for turn in answers)
            assert len(json.loads(steps)) == len(answers)
        assert simulation["judge"] == "openai-compatible:gpt-4o-mini"
        assert simulation["judgeCalls"] == 2 * simulation["userTurns"] - (reason == "turn_limit")
    # every run × metric scored, none with an error
    scores = stored(
        home, "select metric, count(*), count(score), count(error) from simulated.metric_scores "
        "group by metric order by metric",
    )  # fmt: skip
    assert scores == [(m["metric"], 4, 4, 0) for m in sorted(METRICS, key=lambda m: m["metric"])]
    # Tool Use was shown the Calculator's calls on the turns that made them
    tool_use = [b for b in judge.bodies if "Calculator" in json.dumps(b) and "6*7" in json.dumps(b)]
    assert any("tool" in json.dumps(body).lower() for body in tool_use)
    simulation = summary["simulation"]
    assert simulation["conversations"] == 4 and simulation["judge_calls"] > 0
    assert sum(simulation["stopped"].values()) == 4
    assert API_KEY not in first.stdout + first.stderr
    # neither the judge's key nor the webhook's token is stored, and the simulator process
    # left nothing behind (its scratch folder and log go when it succeeded)
    for secret in (API_KEY, URL_TOKEN):
        assert not any(
            secret.encode() in file.read_bytes() for file in home.rglob("*") if file.is_file()
        )
    temp = Path(os.environ["TMPDIR"])
    assert not list(temp.glob("n8n-deepeval-simulation-*"))
    # the report holds every conversation whole, turn by turn (it held the last answer
    # alone, with input: null), and compare names each case by its scenario
    path = write_benchmark(tmp_path, chatbot)
    written = cli(judge, home, "report", str(path), "--out", str(tmp_path / "report"))
    assert written.returncode == 0, written.stderr[-3000:]
    results = json.loads((tmp_path / "report" / "eval-results.json").read_text("utf-8"))
    reported = {run["run_id"]: run for case in results["cases"] for run in case["runs"]}
    assert {case["scenario"]["text"] for case in results["cases"]} == {
        "What is 6*7", "Asks about weather"}  # fmt: skip
    for run_id, session, reason, turns, *_ in outputs:
        conversation = reported[run_id]["conversation"]
        assert (conversation["session_id"], conversation["stop_reason"]) == (session, reason)
        assert [(t["role"], t["content"]) for t in conversation["turns"]] == [
            (t["role"], t["content"]) for t in json.loads(turns)]  # fmt: skip
    html = (tmp_path / "report" / "report.html").read_text("utf-8")
    assert html.count('<dl class="fields turns">') >= 2 and "<dt>scenario</dt>" in html
    version = summary["workflow_hash"][:12]
    compared = cli(judge, home, "compare", str(path), "--baseline", version, "--candidate", version)
    assert compared.returncode == 0, compared.stderr[-3000:]
    assert "scenarios (each run of these cases is a simulated conversation):" in compared.stdout
    assert "  mul      What is 6*7" in compared.stdout

    requests = judge.requests
    again = run(write_benchmark(tmp_path, chatbot), judge, home)
    assert again.returncode == 0, again.stderr[-3000:]
    assert judge.requests == requests  # the same user turns, replayed from the cache
    replayed = json.loads(again.stdout)["simulation"]
    assert replayed["judge_calls"] == 0
    assert replayed["cached_calls"] == simulation["judge_calls"]


def test_a_recorded_target_cannot_be_simulated(tmp_path: Path) -> None:
    (tmp_path / "goldens.csv").write_text(GOLDENS, encoding="utf-8")
    document = {
        "name": "simulated",
        "workflow": str(EXAMPLE / "workflow.json"),
        "dataset": {"path": "goldens.csv"},
        "target": {"type": "recorded", "outputs": str(EXAMPLE / "outputs.jsonl")},
        "simulation": {},
        "metrics": METRICS,
    }
    path = tmp_path / "simulated.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "validate", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert str(path) in done.stderr + done.stdout
    assert "simulation: a recorded target replays outputs captured earlier" in done.stderr + (
        done.stdout
    )


def test_a_killed_simulation_is_charged_to_its_run_when_the_version_is_stored(
    tmp_path: Path,
) -> None:
    # A simulation killed half-way: its simulated users' calls were charged nowhere.
    answered = 8  # the judge answers these, then holds every call until the kill
    judge = LoopbackJudge(latency_s=0.0, faults=["ok"] * answered + ["slow"] * 1000, slow_s=120)
    judge.start()
    chatbot = LoopbackChatbot().start()
    home = tmp_path / "home"
    path = write_benchmark(tmp_path, chatbot)
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(path)]
    try:
        killed = subprocess.Popen(
            command, env=cli_env(judge, home), start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while judge.requests <= answered and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(2)  # the answers reach the simulator; the calls after them wait
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        judge.faults.clear()  # from now on every call is answered at once
        again = run(path, judge, home)
    finally:
        judge.stop()
        chatbot.stop()
    assert again.returncode == 0, again.stderr[-3000:]
    summary = json.loads(again.stdout)
    attempts = summary["attempts"]
    (killed_run,) = set(attempts) - {summary["run_id"]}
    assert attempts[killed_run]["evaluations"] == 0  # it never scored
    assert attempts[killed_run]["judge_calls"] == answered  # every call answered to it


def test_two_runs_of_a_simulation_at_once_each_are_charged_their_own_calls(
    servers: Any, tmp_path: Path
) -> None:
    # Two overlapping runs: each said the calls of the conversations it stored (14),
    # where the judge had answered 130.
    judge, chatbot = servers
    home = tmp_path / "home"
    path = write_benchmark(tmp_path, chatbot)
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(path), "--json"]
    runs = [
        subprocess.Popen(command, env=cli_env(judge, home), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    ended = [process.communicate(timeout=900) for process in runs]
    assert [process.returncode for process in runs] == [0, 0], ended[0][1][-2000:]
    summaries = [json.loads(stdout) for stdout, _ in ended]
    own = [summary["attempts"][summary["run_id"]]["judge_calls"] for summary in summaries]
    assert sum(own) == judge.requests  # each call charged once, to the run it answered
