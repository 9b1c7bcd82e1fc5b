"""Simulated users talking to real n8n chat agents with memory, each in a session of its own.

Real n8n 2.41.1 nodes: a Chat-triggered agent (Chat Trigger → AI Agent with OpenAI Chat
Model, Simple Memory and Calculator → Format), run through a harness copy, and a Webhook
agent whose Simple Memory is keyed by the body's sessionId, called on its webhook. Only
the language model is a loopback fake (FakeOpenAI: it calls the real Calculator when a
message holds `6*7`, else echoes the message with the number of user messages its memory
replayed). A loopback judge plays the users (DeepEval's ConversationSimulator, the
pipeline's judge) and scores the conversations with the multi-turn metrics; it says a
conversation reached its outcome once an answer replays a second user turn, so the small
talk stops there (outcome reached) and the sums run to the turn limit, whatever the hash
of a request draws. Each golden is played twice (2 scenarios × 2 runs per workflow).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.harness_run import HARNESS_PREFIX
from n8n_deepeval_pipeline.n8n_data.conversation import parse_conversation
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer, load_workflow

pytestmark = [pytest.mark.live, pytest.mark.slow]

GOLDENS = (
    "id,scenario,expectedOutcome,userDescription\n"
    "multiply,What is 6*7,The user learns that 6*7 is 42,a student checking homework\n"
    "smalltalk,Greets the assistant and chats,The assistant remembers the greeting,"
    "a friendly visitor\n"
)
MAX_USER_TURNS = 3
OUTCOME_MARK = "(turn 2)"  # the fake model's answer to a second user turn it replayed
METRICS = [
    {"metric": "turn_relevancy"},
    {"metric": "knowledge_retention"},
    {"metric": "conversation_completeness"},
    {"metric": "goal_accuracy"},
    {"metric": "tool_use", "availableTools": ["Calculator"]},
]


@pytest.fixture(scope="module")
def agents(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    """The two agents in n8n, their model a FakeOpenAI; the Webhook agent published."""
    with FakeOpenAI() as llm:
        credential = n8n.openai_credential("Fake OpenAI (simulation)", llm.base_url)
        chat = n8n.create_workflow(n8n.chat_agent(credential), activate=False)
        memory = json.loads(
            json.dumps(load_workflow("memory_agent")).replace(
                "__OPENAI_CREDENTIAL_ID__", credential
            )
        )
        path = f"memory-agent-{uuid.uuid4().hex[:8]}"
        memory["nodes"][0]["parameters"]["path"] = path
        memory["nodes"][0]["webhookId"] = str(uuid.uuid4())
        webhook = n8n.create_workflow(memory)
        warm_up = n8n.wait_for_webhook(path, body={"chatInput": "Hello", "sessionId": "warm-up"})
        assert warm_up.json()["output"] == "Echo: Hello", warm_up.text
        yield {"chat": chat, "webhook": webhook, "url": n8n.webhook_url(path), "llm": llm}


class OutcomeJudge(LoopbackJudge):
    """A loopback judge (a test double) that decides when a simulated user's outcome is reached.

    The plain loopback draws DeepEval's `is_complete` from a hash of the request, so which
    conversation stops when would change with any byte of the simulator's prompt. Here it is
    reached when the conversation holds an answer to a second user turn from memory.
    """

    def _structured(self, request: dict[str, Any], schema: Any, prompt: str) -> str:
        answer = json.loads(super()._structured(request, schema, prompt))
        if isinstance(answer, dict) and "is_complete" in answer:
            answer["is_complete"] = OUTCOME_MARK in prompt
        return json.dumps(answer)


@pytest.fixture(scope="module")
def judge() -> Iterator[LoopbackJudge]:
    server = OutcomeJudge(latency_s=0.0).start()
    yield server
    server.stop()


def benchmark(tmp_path: Path, name: str, workflow_id: str, target: dict[str, Any]) -> Path:
    (tmp_path / "goldens.csv").write_text(GOLDENS, encoding="utf-8")
    document = {
        "name": name,
        "workflow": {"id": workflow_id},
        "dataset": {"path": "goldens.csv"},
        "runsPerRow": 2,
        "target": target,
        "simulation": {"maxUserTurns": MAX_USER_TURNS},
        "metrics": METRICS,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def run(
    path: Path, monkeypatch: pytest.MonkeyPatch, n8n: N8nServer, judge: LoopbackJudge, home: Path
) -> dict[str, Any]:
    use_cli(monkeypatch, n8n, home, workers=2, provider="openai-compatible",
            model="gpt-4o-mini", base_url=judge.base_url)  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    print(done.stdout)  # the closing note quotes this summary
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return {"stdout": done.stdout, "stderr": done.stderr}


def conversations(home: Path, name: str) -> list[dict[str, Any]]:
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        rows = db.execute(
            f"select run_id, session_id, stop_reason, turns, simulation, error "
            f"from {name}.agent_outputs order by run_id"
        ).fetchall()
        scores = db.execute(
            f"select run_id, metric, score, error from {name}.metric_scores order by metric"
        ).fetchall()
    found = []
    for run_id, session, reason, turns, simulation, error in rows:
        found.append({
            "run_id": run_id, "run": run_id.split(":", 1)[1], "session": session,
            "stop_reason": reason,
            "turns": json.loads(turns), "simulation": json.loads(simulation), "error": error,
            "scores": {metric: (score, why) for run, metric, score, why in scores if run == run_id},
        })  # fmt: skip
    return found


def check_conversations(played: list[dict[str, Any]], answer_prefix: str = "") -> None:
    """What both agents' conversations must show: sessions, stopping reasons, memory, scores."""
    assert len(played) == 4
    assert len({conversation["session"] for conversation in played}) == 4
    for conversation in played:
        turns, simulation = conversation["turns"], conversation["simulation"]
        assert conversation["error"] is None
        assert conversation["session"].startswith(conversation["run_id"] + ":")
        user = [turn for turn in turns if turn["role"] == "user"]
        answers = [turn for turn in turns if turn["role"] == "assistant"]
        assert len(user) == len(answers) == simulation["userTurns"] >= 1
        if conversation["run"].startswith("multiply"):  # never a second turn from memory
            assert (conversation["stop_reason"], len(user)) == ("turn_limit", MAX_USER_TURNS)
        else:  # the second answer replays the first turn: the outcome is reached
            assert (conversation["stop_reason"], len(user)) == ("outcome_reached", 2)
        for number, answer in enumerate(answers, start=1):
            text = answer["content"].removeprefix(answer_prefix)
            if conversation["run"].startswith("multiply"):  # the real Calculator, each turn
                assert text == "The answer is 42."
                (step,) = answer["intermediateSteps"]
                assert step["action"]["tool"] == "Calculator"
                assert json.loads(step["observation"]) == [{"response": "42"}]
            else:  # memory replays exactly this conversation's earlier messages
                assert text.startswith("Echo: [dry-run] user turn")
                assert text.endswith(f" (turn {number})") or number == 1
                assert answer["intermediateSteps"] == []
        assert set(conversation["scores"]) == {metric["metric"] for metric in METRICS}
        assert all(
            score is not None and error is None for score, error in conversation["scores"].values()
        )


def test_a_chat_triggered_agent_with_memory_through_its_harness_copy(
    n8n: N8nServer,
    agents: dict[str, Any],
    judge: LoopbackJudge,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format"}
    run(benchmark(tmp_path, "live_chat_simulation", agents["chat"], target), monkeypatch,
        n8n, judge, tmp_path / "home")  # fmt: skip
    played = conversations(tmp_path / "home", "live_chat_simulation")
    print(json.dumps(played[-1], indent=1))  # the closing note quotes one conversation
    check_conversations(played, answer_prefix="Agent said: ")
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        names = [str(workflow["name"]) for workflow in client.workflows()]
    assert not any(name.startswith(HARNESS_PREFIX) for name in names)


def test_a_webhook_agent_with_a_session_field(
    n8n: N8nServer,
    agents: dict[str, Any],
    judge: LoopbackJudge,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = {"type": "n8n_webhook", "url": agents["url"], "stepsFromExecution": True}
    run(benchmark(tmp_path, "live_webhook_simulation", agents["webhook"], target), monkeypatch,
        n8n, judge, tmp_path / "home")  # fmt: skip
    played = conversations(tmp_path / "home", "live_webhook_simulation")
    print(json.dumps(played[-1], indent=1))  # the closing note quotes one conversation
    check_conversations(played)
    # Read back from n8n: one execution per turn, each in its conversation's session, its
    # Simple Memory replaying exactly that conversation's earlier turns, no other's.
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        executions = client.executions(agents["webhook"], limit=100)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for execution in executions:
        run_data = execution["data"]["resultData"]["runData"]
        body = run_data["Webhook"][0]["data"]["main"][0][0]["json"]["body"]
        by_session.setdefault(body["sessionId"], []).append(execution)
    for conversation in played:
        turns = [(turn["role"], turn["content"]) for turn in conversation["turns"]]
        session = sorted(by_session[conversation["session"]], key=lambda e: int(e["id"]))
        assert len(session) == len(turns) // 2  # one execution per answered user turn
        for number, execution in enumerate(session, start=1):
            assert memory_before(execution) == turns[: 2 * (number - 1)]


def memory_before(execution: dict[str, Any]) -> list[tuple[str, str]]:
    """The session's history the Simple Memory loaded for an execution's agent."""
    runs = execution["data"]["resultData"]["runData"]["Simple Memory"]
    loaded = [
        item["json"].get("chatHistory") or []
        for run in runs
        for item in run["data"]["ai_memory"][0]
        if item["json"].get("action") == "loadMemoryVariables"
    ]
    return [(turn.role, turn.content) for turn in parse_conversation(loaded[0]) or []]
