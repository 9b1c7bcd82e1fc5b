"""A chat-triggered n8n AI Agent benchmarked as it is, by its start and end node.

Real n8n nodes all the way: Chat Trigger → AI Agent (OpenAI Chat Model, Calculator tool,
Simple Memory) → Format. Only the language model is a loopback fake (FakeOpenAI), which
calls the real Calculator node and then answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import workflow_hash
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.harness_run import HARNESS_PREFIX
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer

pytestmark = [pytest.mark.live, pytest.mark.slow]
TRIGGER = "When chat message received"


@pytest.fixture(scope="module")
def chat_agent(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    """The user's agent in n8n (not published: the pipeline never calls its trigger)."""
    with FakeOpenAI() as llm:
        workflow = n8n.chat_agent(n8n.openai_credential("Fake OpenAI", llm.base_url))
        workflow_id = n8n.create_workflow(workflow, activate=False)
        yield {"id": workflow_id, "llm": llm}


def write_benchmark(tmp_path: Path, workflow_id: str, start: str = "AI Agent") -> Path:
    (tmp_path / "cases.csv").write_text(
        "id,question,expected,tools\n"
        'mul,What is 6*7?,Agent said: The answer is 42.,"[""Calculator""]"\n'
        "hello,Hello,Agent said: Echo: Hello,[]\n",
        encoding="utf-8",
    )
    document = {
        "name": "live_chat",
        "workflow": {"id": workflow_id},
        "dataset": {"path": "cases.csv", "columnMapping": {
            "input": "question", "expectedOutput": "expected", "expectedTools": "tools"}},
        "runsPerRow": 2,
        "target": {"type": "n8n_workflow", "startNodeName": start, "endNodeName": "Format"},
        "metrics": [{"metric": "exact_match"}, {"metric": "tool_correctness"}],
    }  # fmt: skip
    path = tmp_path / "chat.benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def workflow_names(n8n: N8nServer) -> list[str]:
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        return sorted(str(workflow["name"]) for workflow in client.workflows())


def test_the_agent_runs_from_start_to_end_node_and_leaves_no_copy(
    n8n: N8nServer,
    chat_agent: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = use_cli(monkeypatch, n8n, tmp_path / "home", workers=2)
    original = n8n.api("GET", f"/workflows/{chat_agent['id']}").json()
    with N8nClient(n8n.base_url, n8n.api_key) as client:  # a copy a crashed run left behind
        client.create_workflow(
            {"name": f"{HARNESS_PREFIX} live_chat 0123456789ab dead", "nodes": [],
             "connections": {}, "settings": {"executionOrder": "v1"}}
        )  # fmt: skip
    before = workflow_names(n8n)
    print("workflows before:", before)

    result = CliRunner().invoke(main, ["run", str(write_benchmark(tmp_path, chat_agent["id"]))])
    print(result.stdout)  # the closing note quotes this summary
    assert result.exit_code == 0, result.output
    after = workflow_names(n8n)
    print("workflows after:", after)
    assert after == [name for name in before if not name.startswith(HARNESS_PREFIX)]
    assert "runs 4 · pass rate 100.0% (allPass)" in result.stdout

    with duckdb.connect(str(database), read_only=True) as connection:
        outputs = connection.execute(
            "select run_id, actual_output, intermediate_steps, session_id "
            "from live_chat.agent_outputs order by run_id"
        ).fetchall()
    by_run = {run_id.split(":", 1)[1]: row for run_id, *row in outputs}
    assert by_run["mul:0"][0] == "Agent said: The answer is 42."
    (step,) = json.loads(by_run["mul:0"][1])  # the real Calculator node's step
    assert step["action"]["tool"] == "Calculator"
    assert json.loads(step["observation"]) == [{"response": "42"}]
    # Each run has its own session: the second run of a row did not see the first in memory.
    assert by_run["hello:1"][0] == "Agent said: Echo: Hello"
    assert len({row[2] for row in by_run.values()}) == 4
    unchanged = n8n.api("GET", f"/workflows/{chat_agent['id']}").json()
    assert workflow_hash(unchanged) == workflow_hash(original)


def test_validate_refuses_the_trigger_as_start_node(
    n8n: N8nServer, chat_agent: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_cli(monkeypatch, n8n, tmp_path / "home")
    path = write_benchmark(tmp_path, chat_agent["id"], start=TRIGGER)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    assert (
        f'target: start node "{TRIGGER}" is a trigger: name the first node the trigger feeds'
        in result.output
    )
