"""A benchmark run's trace, received by a real OpenTelemetry receiver (Arize Phoenix).

The bundled example runs with a loopback judge and N8N_DEEPEVAL_OTLP_ENDPOINT pointing at
Phoenix on loopback; the spans are read back through Phoenix's REST API and set against
the run's stored tables: every workflow call, tool call, evaluation and judge call is
there once, under the right parent, with the GenAI conventions' attributes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import EXAMPLE
from tests.live.conftest import LIVE, use_cli
from tests.live.phoenix_server import ensure_phoenix, phoenix_server

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _stored(database: Path) -> tuple[int, Counter[str], int]:
    """Runs, tool calls by tool name, and score rows of the example's stored version."""
    with duckdb.connect(str(database), read_only=True) as db:
        outputs = db.execute(
            "select intermediate_steps from support_agent.agent_outputs"
        ).fetchall()
        (scores,) = db.execute("select count(*) from support_agent.metric_scores").fetchone()
    tools = Counter(
        step["action"]["tool"] for (steps,) in outputs for step in json.loads(steps or "[]")
    )
    return len(outputs), tools, scores


def test_every_workflow_tool_and_judge_call_of_a_run_is_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not LIVE:
        pytest.skip("live trace test: set N8N_DEEPEVAL_LIVE=1 (installs Phoenix, ~1 min cold)")
    install_dir = ensure_phoenix()
    (tmp_path / "phoenix").mkdir()
    judge = LoopbackJudge(latency_s=0.01).start()
    try:
        with phoenix_server(install_dir, tmp_path / "phoenix") as phoenix:
            # the example's target is recorded: no n8n
            database = use_cli(monkeypatch, None, tmp_path / "home", workers=2,
                               provider="openai-compatible", model="loopback-judge",
                               base_url=judge.base_url)  # fmt: skip
            monkeypatch.setenv("N8N_DEEPEVAL_OTLP_ENDPOINT", phoenix.base_url)
            done = subprocess.run(
                [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run",
                 str(EXAMPLE / "benchmark.yaml"), "--json"],
                capture_output=True, text=True, timeout=900, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
            summary = json.loads(done.stdout)
            runs, tools, scores = _stored(database)
            judge_calls = summary["judge_calls"] + summary["cached_calls"]
            expected = 1 + 2 * runs + sum(tools.values()) + scores + judge_calls
            spans = phoenix.wait_for_trace()
    finally:
        judge.stop()

    assert len(spans) == expected
    by_id = {span["context"]["span_id"]: span for span in spans}

    def parent(span: dict[str, Any]) -> dict[str, Any]:
        return by_id[span["parent_id"]]

    (root,) = [span for span in spans if span["parent_id"] is None]
    assert root["name"] == "benchmark support_agent"
    assert root["attributes"]["n8n_deepeval.version"] == summary["workflow_hash"][:12]
    assert root["attributes"]["n8n_deepeval.trace.spans"] == expected
    assert len({span["context"]["trace_id"] for span in spans}) == 1
    named = Counter(span["name"].split(" ")[0] for span in spans)
    assert named == Counter({"benchmark": 1, "run": runs, "invoke_workflow": runs,
                             "execute_tool": sum(tools.values()), "evaluate": scores,
                             "chat": judge_calls})  # fmt: skip
    calls = [span for span in spans if span["name"].startswith("invoke_workflow")]
    for call in calls:
        assert parent(call)["name"].startswith("run ") and parent(parent(call)) is root
        assert call["attributes"]["gen_ai.operation.name"] == "invoke_workflow"
        events = [e for e in call["events"] if e["name"] == "gen_ai.evaluation.result"]
        assert len(events) == scores // runs
        assert {e["attributes"]["gen_ai.evaluation.name"] for e in events} >= {"tool_correctness"}
    tool_spans = [span for span in spans if span["name"].startswith("execute_tool")]
    assert Counter(s["attributes"]["gen_ai.tool.name"] for s in tool_spans) == tools
    assert all(parent(s)["name"].startswith("invoke_workflow") for s in tool_spans)
    chats = [span for span in spans if span["name"].startswith("chat")]
    assert all(parent(s)["name"].startswith("evaluate ") for s in chats)
    assert {s["attributes"]["gen_ai.request.model"] for s in chats} == {"loopback-judge"}
    tokens = [
        s["attributes"]["gen_ai.usage.input_tokens"] + s["attributes"]["gen_ai.usage.output_tokens"]
        for s in chats
    ]
    assert sum(tokens) == summary["tokens"]
    answered = [s for s in chats if not s["attributes"]["n8n_deepeval.judge.cached"]]
    assert len(answered) == summary["judge_calls"]
