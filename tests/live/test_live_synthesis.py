"""Synthesized goldens for a real agent on the real n8n: `dataset synthesize` and
`init --synthesize` write rows that `validate` passes and `run` scores.

Webhook → AI Agent (OpenAI Chat Model, Calculator) → Format, real n8n nodes; the agent's
model is FakeOpenAI and the judge that writes the goldens (and scores them) is the
deterministic loopback judge, whose free text differs from prompt to prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer

pytestmark = [pytest.mark.live, pytest.mark.slow]
SYSTEM_MESSAGE = (
    "You are Acme's support agent: answer questions about orders, and use the Calculator for sums."
)


def webhook_agent(chat_agent: dict[str, Any]) -> dict[str, Any]:
    """The bundled chat agent behind a Webhook, without memory: a single-turn agent."""
    nodes = [node for node in chat_agent["nodes"] if node["name"] != "Simple Memory"]
    nodes[0] = {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
                "position": [0, 0], "webhookId": "5e0c1f7a-3b2d-4c1e-9f00-00000000e5e1",
                "parameters": {"httpMethod": "POST", "path": "synth-agent",
                               "responseMode": "lastNode", "options": {}}}  # fmt: skip
    agent = next(node for node in nodes if node["name"] == "AI Agent")
    agent["parameters"] = {
        "promptType": "define",
        "text": "={{ $json.body.question }}",
        "options": {"systemMessage": SYSTEM_MESSAGE, "returnIntermediateSteps": True},
    }
    connections = {("Webhook" if name == "When chat message received" else name): links
                   for name, links in chat_agent["connections"].items()
                   if name != "Simple Memory"}  # fmt: skip
    return {**chat_agent, "name": "synthesis agent", "nodes": nodes, "connections": connections}


@pytest.fixture(scope="module")
def agent(n8n: N8nServer) -> Iterator[str]:
    """The agent in n8n (not published: the benchmark runs a harness copy of it)."""
    with FakeOpenAI() as llm:
        credential = n8n.openai_credential("Fake OpenAI (synthesis)", llm.base_url)
        workflow_id = n8n.create_workflow(webhook_agent(n8n.chat_agent(credential)), activate=False)
        try:
            yield workflow_id
        finally:
            n8n.delete_workflow(workflow_id)


@pytest.fixture
def env(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackJudge]:
    judge = LoopbackJudge(latency_s=0.0, free_text=True).start()
    use_cli(monkeypatch, n8n, tmp_path / "home", workers=2, provider="openai", model="gpt-4.1",
            base_url=judge.base_url, api_key="sk-live-synthesis")  # fmt: skip
    yield judge
    judge.stop()


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    print(f"$ n8n-deepeval {' '.join(args)}\n{result.output}")  # the report quotes these
    assert result.exit_code == 0, result.output
    return result


def test_synthesized_rows_for_a_real_agent_validate_and_run(
    agent: str, env: LoopbackJudge, tmp_path: Path
) -> None:
    out = tmp_path / "bench" / "agent.benchmark.yaml"
    made = invoke("init", agent, "--synthesize", "2", "--out", str(out))
    document = yaml.safe_load(out.read_text("utf-8"))
    dataset = out.parent / document["dataset"]["path"]
    before = [json.loads(line) for line in dataset.read_text("utf-8").splitlines()]
    assert f"ok {out}: {len(before)} rows" in made.stdout
    prompts = " ".join(json.dumps(body["messages"]) for body in env.bodies)
    assert SYSTEM_MESSAGE in prompts  # the agent's system message styled the goldens
    assert "Calculator (Useful for getting the result of a math expression" in prompts

    # The benchmark file as the source: its workflow read from n8n, its dataset grown.
    added = invoke("dataset", "synthesize", str(out), "--out", str(dataset), "--count", "3",
                   "--seed", "11")  # fmt: skip
    rows = [json.loads(line) for line in dataset.read_text("utf-8").splitlines()]
    assert rows[: len(before)] == before and len(rows) > len(before)
    assert f"{len(rows) - len(before)} new in {dataset}" in added.stdout
    assert all(row["synthetic"] is True and row["rowId"].startswith("syn-") for row in rows)

    checked = invoke("validate", str(out))
    assert f"{len(rows)} rows" in checked.stdout
    ran = invoke("run", str(out))
    assert f"runs {len(rows) * document['runsPerRow']} · " in ran.stdout
    assert "helpfulness" in ran.stdout and "DRY-RUN" not in ran.stdout
