"""`optimize` on a real n8n: a prompt the agent lacks is found, proven on held-out rows, adopted.

Real n8n all the way (Webhook → AI Agent with the OpenAI Chat Model and an HTTP Request
Tool "Order Lookup" → an HTTP Request "Notify" → Format, both HTTP nodes calling a loopback
service that counts its requests). Two test doubles stand in for models:

- ``SigningOffLLM``, the agent's language model (a FakeOpenAI): its answers end with
  "Kind regards, Acme." only when its system message asks for that sign-off, which the
  workflow's agent has no system message for;
- ``PromptEngineer``, the judge and so the optimiser model (a LoopbackJudge): its diagnosis
  names what the failing answers lack, and its rewrite adds that instruction to the prompt
  it was given (only when the diagnosis it read shows a failing score).

The benchmark decides a run by a Pattern Match (the sign-off), so the search (GEPA, within
a budget of workflow calls) has something real to find, the held-out verdict is decided by
the workflow's own answers, and both nodes that would call the service are mocked: the
service must see no request at all, in the search as in the proof.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.testing.prompt_engineer import PromptEngineer
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI, text_of
from tests.live.n8n_server import N8nServer
from tests.live.test_live_mocks import CountingService, orders_agent

pytestmark = [pytest.mark.live, pytest.mark.slow]
SIGN_OFF = "Kind regards, Acme."
INSTRUCTION = f"End every answer with: {SIGN_OFF}"
QUESTIONS = [
    ("r1", "Hello there"), ("r2", "Please use order lookup for order 17"),
    ("r3", "Do you sell tents?"), ("r4", "Please use order lookup for order 42"),
    ("r5", "What are your opening hours?"), ("r6", "Can I pay by card?"),
    ("r7", "Please use order lookup for order 7"), ("r8", "Do you ship abroad?"),
]  # fmt: skip
MOCKS = {"nodes": {"Order Lookup": {"response": [{"status": "shipped on Monday"}]},
                   "Notify": {"response": {"status": "queued"}}}}  # fmt: skip


class SigningOffLLM(FakeOpenAI):
    """A FakeOpenAI whose answers sign off only when the system message asks it to."""

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        message = super().reply(body)
        system = " ".join(
            text_of(m) for m in body.get("messages") or [] if m.get("role") == "system"
        )
        if message.get("content") and SIGN_OFF in system:
            message = {**message, "content": f"{message['content']} {SIGN_OFF}"}
        return message


@pytest.fixture(scope="module")
def agent(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    service = CountingService()
    with SigningOffLLM() as llm:
        credential = n8n.openai_credential("Fake OpenAI", llm.base_url)
        workflow_id = n8n.create_workflow(orders_agent(credential, service.url, True), False)
        try:
            yield {"id": workflow_id, "llm": llm, "service": service}
        finally:
            n8n.delete_workflow(workflow_id)
            service.close()


@pytest.fixture
def engineer(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    judge = PromptEngineer(INSTRUCTION, f"the answers do not end with {SIGN_OFF!r}", latency_s=0.0)
    judge.start()
    use_cli(monkeypatch, n8n, tmp_path / "home", provider="openai", model="gpt-4.1",
            base_url=judge.base_url, api_key="sk-live-optimize")  # fmt: skip
    yield judge
    judge.stop()


def write_benchmark(tmp_path: Path, workflow_id: str) -> tuple[Path, str]:
    rows = "\n".join(f"{key},{question}" for key, question in QUESTIONS)
    (tmp_path / "cases.csv").write_text(f"id,question\n{rows}\n", encoding="utf-8")
    text = f"""# The support agent, benchmarked on its sign-off.
name: live_optimize
workflow: {{id: {workflow_id}}}
dataset:
  path: cases.csv
  columnMapping: {{input: question}}
runsPerRow: 2   # each held-out row twice
target:
  type: n8n_workflow
  startNodeName: AI Agent
  endNodeName: Format
  mocks: {json.dumps(MOCKS)}
metrics:
  - metric: pattern_match   # the answer signs off
    pattern: "(?s).*Kind regards, Acme\\\\..*"
optimize:
  algorithm: gepa
  gepa: {{iterations: 2, minibatchSize: 3, paretoSize: 2, patience: 2}}
  split: {{heldOut: 0.375, seed: 3}}
  budget: {{workflowCalls: 40}}
"""
    path = tmp_path / "optimize.benchmark.yaml"
    path.write_text(text, encoding="utf-8")
    return path, text


def test_optimize_finds_proves_and_adopts_the_missing_instruction(
    agent: dict[str, Any], engineer: PromptEngineer, tmp_path: Path
) -> None:
    path, original = write_benchmark(tmp_path, agent["id"])
    service = agent["service"]
    service.requests.clear()
    result = CliRunner().invoke(main, ["optimize", str(path)])
    print(f"$ n8n-deepeval optimize {path.name}\n{result.output}")  # the closing note quotes it
    assert result.exit_code == 0, result.output
    assert sum(service.requests.values()) == 0, dict(service.requests)

    rounds = [line for line in result.stderr.splitlines() if line.startswith("round ")]
    assert rounds and all(" · workflow calls " in line for line in rounds)
    calls = [int(re.search(r"workflow calls (\d+)", line)[1]) for line in rounds]
    assert calls == sorted(calls) and calls[-1] <= 40  # the budget
    assert f"+{INSTRUCTION}" in result.stdout  # the diff
    assert "verdict: a significant improvement" in result.stdout
    assert re.search(r"workflow\s+0\.0% \[0\.0%, \d+\.\d%\] 0/6", result.stdout)
    assert re.search(r"candidate\s+100\.0% \[\d+\.\d%, 100\.0%\] 6/6", result.stdout)

    # Adopted as a variant, inserted into the file as text: the rest is byte for byte.
    edited = path.read_text(encoding="utf-8")
    assert edited.startswith(original.split("metrics:")[0].rstrip("\n"))
    assert "# The support agent, benchmarked on its sign-off." in edited
    variants = yaml.safe_load(edited)["target"]["variants"]
    ((name, overrides),) = variants.items()
    assert name.startswith("optimized_")
    assert overrides["AI Agent"]["options.systemMessage"].endswith(INSTRUCTION)
    validated = CliRunner().invoke(main, ["validate", str(path)])
    assert validated.exit_code == 0, validated.output


def test_a_spent_budget_ends_the_search_with_what_it_found(
    agent: dict[str, Any], engineer: PromptEngineer, tmp_path: Path
) -> None:
    path, _ = write_benchmark(tmp_path, agent["id"])
    text = path.read_text(encoding="utf-8").replace("workflowCalls: 40", "workflowCalls: 3")
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["optimize", str(path), "--json"])
    print(result.output)
    assert result.exit_code == 1, result.output  # nothing better found: nothing adopted
    outcome = json.loads(result.stdout)["outcome"]
    assert outcome["stop"] == "budget"
    assert outcome["stop_detail"] == "workflow calls: 3 of 3"
    assert outcome["spend"]["answer_calls"] == 3  # counted before each call: never over
    assert outcome["best_text"] == "You are a helpful assistant"  # what n8n's editor fills in
    assert json.loads(result.stdout)["proof"] is None
