"""Real traffic on the real n8n: executions read back into datasets, and `init` on an agent.

A webhook workflow and the chat agent (Chat Trigger → AI Agent with the Calculator tool
and Simple Memory → Format; the model is FakeOpenAI) are published and called as users
would call them; the executions n8n stores are what the commands read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer

pytestmark = [pytest.mark.live, pytest.mark.slow]

ECHO_PATH = "traffic-echo"
ECHO_WORKFLOW = {
    "name": "traffic echo",
    "nodes": [
        {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
         "position": [0, 0], "webhookId": "5e0c1f7a-3b2d-4c1e-9f00-00000000e001",
         "parameters": {"httpMethod": "POST", "path": ECHO_PATH, "responseMode": "lastNode",
                        "options": {}}},
        {"name": "Answer", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [220, 0],
         "parameters": {"assignments": {"assignments": [
             {"id": "a1", "name": "output", "type": "string",
              "value": "={{ 'Echo: ' + $json.body.question }}"}]}, "options": {}}},
    ],
    "connections": {"Webhook": {"main": [[{"node": "Answer", "type": "main", "index": 0}]]}},
}  # fmt: skip
SESSIONS = {"live-a": ["Hello", "What is 6*7?", "Thanks"], "live-b": ["Hi there"]}


@pytest.fixture
def api_env(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_cli(monkeypatch, n8n, tmp_path / "home", workers=2)


def wait_for_executions(n8n: N8nServer, workflow_id: str, count: int) -> None:
    """n8n stores an execution a moment after it answered."""
    deadline = time.monotonic() + 30
    while True:
        found = n8n.api("GET", "/executions", {"workflowId": workflow_id, "limit": 250}).json()
        if len(found["data"]) >= count or time.monotonic() > deadline:
            assert len(found["data"]) == count, found
            return
        time.sleep(0.25)


def draw(workflow_id: str, *args: str) -> Any:
    result = CliRunner().invoke(main, ["dataset", "from-executions", workflow_id, *args])
    print(result.output)  # the closing note quotes these
    assert result.exit_code == 0, result.output
    return result


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_webhook_executions_become_one_row_each_and_a_second_read_adds_none(
    n8n: N8nServer, api_env: None, tmp_path: Path
) -> None:
    workflow_id = n8n.create_workflow(ECHO_WORKFLOW)
    try:
        assert n8n.wait_for_webhook(ECHO_PATH, body={"question": "q1"}).status_code == 200
        for question in ("q2", "q3"):
            assert n8n.call_webhook(ECHO_PATH, {"question": question}).json() == {
                "output": f"Echo: {question}"
            }
        wait_for_executions(n8n, workflow_id, 3)
        out = tmp_path / "traffic.jsonl"
        assert "3 executions → 3 rows · 3 new" in draw(workflow_id, "--out", str(out)).stdout
        assert sorted(row["input"] for row in lines(out)) == ["q1", "q2", "q3"]
        assert "0 new in" in draw(workflow_id, "--out", str(out)).stdout

        for question in ("q1", "q4"):  # a repeated question is the same row
            n8n.call_webhook(ECHO_PATH, {"question": question})
        wait_for_executions(n8n, workflow_id, 5)
        again = draw(workflow_id, "--expected-from-output", "--out", str(tmp_path / "e.jsonl"))
        assert "5 executions → 4 rows (1 duplicate(s))" in again.stdout
        assert {row["input"]: row["expectedOutput"] for row in lines(tmp_path / "e.jsonl")} == {
            f"q{n}": f"Echo: q{n}" for n in range(1, 5)
        }
        assert "1 new in" in draw(workflow_id, "--out", str(out)).stdout
        assert len(lines(out)) == 4
    finally:
        n8n.delete_workflow(workflow_id)


@pytest.fixture(scope="module")
def chatted(n8n: N8nServer) -> Iterator[str]:
    """The chat agent, published with a public chat, after two users' sessions with it."""
    with FakeOpenAI() as llm:
        workflow = n8n.chat_agent(n8n.openai_credential("Fake OpenAI (traffic)", llm.base_url))
        workflow["name"] = "traffic chat agent"
        trigger = workflow["nodes"][0]
        trigger["parameters"] = {"public": True, "options": {"responseMode": "lastNode"}}
        workflow_id = n8n.create_workflow(workflow)
        url = n8n.webhook_url(f"{trigger['webhookId']}/chat")
        for session, messages in SESSIONS.items():
            for message in messages:
                body = {"action": "sendMessage", "sessionId": session, "chatInput": message}
                answer = _chat(url, body)
                assert answer.status_code == 200, answer.text
        wait_for_executions(n8n, workflow_id, 4)
        try:
            yield workflow_id
        finally:
            n8n.delete_workflow(workflow_id)


def _chat(url: str, body: dict[str, Any]) -> httpx2.Response:
    """One chat message; the first may meet the webhook before it is registered."""
    deadline = time.monotonic() + 30
    while (answer := httpx2.post(url, json=body, timeout=60)).status_code == 404:
        assert time.monotonic() < deadline, "the chat webhook was never served"
        time.sleep(0.25)
    return answer


def test_a_chat_session_of_three_messages_is_one_row_with_three_turns(
    n8n: N8nServer, chatted: str, api_env: None, tmp_path: Path
) -> None:
    out = tmp_path / "chats.jsonl"
    draw(chatted, "--expected-from-output", "--out", str(out))
    rows = {tuple(row["messages"]): row for row in lines(out)}
    assert set(rows) == {tuple(messages) for messages in SESSIONS.values()}
    long = rows[tuple(SESSIONS["live-a"])]
    assert long["input"] == "Hello" and len(long["executionIds"]) == 3
    assert long["expectedTools"] == ["Calculator"]  # the real Calculator node, in message 2
    assert long["expectedOutput"].startswith("Agent said: Echo: Thanks")
    assert "0 new in" in draw(chatted, "--expected-from-output", "--out", str(out)).stdout


def test_init_on_the_real_agent_writes_a_benchmark_that_validates_and_runs(
    n8n: N8nServer, chatted: str, api_env: None, tmp_path: Path
) -> None:
    out = tmp_path / "bench" / "benchmark.yaml"
    made = CliRunner().invoke(main, ["init", chatted, "--from-executions", "--out", str(out)])
    print(made.output, out.read_text("utf-8"))  # the closing note quotes this
    assert made.exit_code == 0, made.output
    assert "ok " in made.stdout and "2 rows · 5 metrics" in made.stdout
    document = yaml.safe_load(out.read_text("utf-8"))
    assert document["target"]["startNodeName"] == "AI Agent"
    assert document["target"]["endNodeName"] == "Format"
    assert [m["metric"] for m in document["metrics"]] == [
        "pattern_match", "helpfulness", "tool_permission", "turn_relevancy",
        "knowledge_retention"]  # fmt: skip

    ran = CliRunner().invoke(main, ["run", str(out)])
    print(ran.stdout)
    assert ran.exit_code == 0, ran.output
    assert "runs 8 · " in ran.stdout  # 2 sessions × 4 runs, where a drop can fail the gate
    # the dry-run judge's placeholders (knowledge retention's was 0.000 every time) decide
    # no run: the checks that need no judge do, and the agent answered every time
    assert "runs 8 · pass rate 100.0%" in ran.stdout
    assert "placeholders decide no run: the pass rate is decided by answered, tool_permission" in (
        ran.stdout
    )
