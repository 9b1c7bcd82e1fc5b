"""A workflow that answers through a Respond to Webhook node, benchmarked as a user starts.

Real n8n 2.41.1 nodes, no language model: a Webhook (responding with a Respond to Webhook
node) → a Code node that routes a ticket → Respond to Webhook. Production traffic is three
tickets; `init --from-executions` writes the benchmark (a harness copy from the Code node
to the Respond node, each row's webhook body taken whole) and `run` runs it, 2 runs a row.
The harness copy must answer through the Respond node (n8n refuses a copy whose webhook
does not wait for it), and every run must be sent in its own session.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from tests.live.conftest import use_cli
from tests.live.n8n_server import N8nServer

pytestmark = [pytest.mark.live, pytest.mark.slow]

ROUTE = """
const q = ($json.body.question || '').toLowerCase();
const team = q.includes('refund') ? 'billing' : q.includes('password') ? 'account' : 'general';
return [{json: {output: `Routed to ${team}`, team}}];
"""
TICKETS = {
    "I want a refund for order 12": "Routed to billing",
    "I forgot my password": "Routed to account",
    "Where is your office?": "Routed to general",
}


def triage(path: str) -> dict[str, Any]:
    return {
        "name": f"Ticket triage {path}",
        "nodes": [
            {"name": "Ticket in", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
             "position": [0, 0], "webhookId": str(uuid.uuid4()),
             "parameters": {"httpMethod": "POST", "path": path, "responseMode": "responseNode"}},
            {"name": "Route", "type": "n8n-nodes-base.code", "typeVersion": 2,
             "position": [220, 0], "parameters": {"jsCode": ROUTE}},
            {"name": "Answer", "type": "n8n-nodes-base.respondToWebhook", "typeVersion": 1.1,
             "position": [440, 0], "parameters": {"respondWith": "firstIncomingItem"}},
        ],
        "connections": {
            "Ticket in": {"main": [[{"node": "Route", "type": "main", "index": 0}]]},
            "Route": {"main": [[{"node": "Answer", "type": "main", "index": 0}]]},
        },
    }  # fmt: skip


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_workflow_answering_through_a_respond_node_runs_from_init(
    n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = f"triage-{uuid.uuid4().hex[:8]}"
    workflow_id = n8n.create_workflow(triage(path))
    for question, routed in TICKETS.items():
        answer = n8n.wait_for_webhook(path, body={"question": question})
        assert answer.json()["output"] == routed, answer.text
    database = use_cli(monkeypatch, n8n, tmp_path / "home")
    file = tmp_path / "bench" / "benchmark.yaml"
    written = cli("init", workflow_id, "--from-executions", "--out", str(file))
    assert written.returncode == 0, written.stdout + written.stderr
    benchmark = yaml.safe_load(file.read_text(encoding="utf-8"))
    assert benchmark["target"]["endNodeName"] == "Answer"
    assert benchmark["target"]["input"] == "{{ row['body'] }}"
    benchmark["runsPerRow"] = 2
    file.write_text(yaml.safe_dump(benchmark), encoding="utf-8")
    done = cli("run", str(file))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    with duckdb.connect(str(database), read_only=True) as db:
        rows = db.execute(
            f"select run_id, session_id, actual_output, error, llm_prompt_tokens "
            f"from {benchmark['name']}.agent_outputs order by run_id"
        ).fetchall()
    # every run answered what the Respond node answers in production (the Code's output)
    assert sorted(output for _, _, output, _, _ in rows) == sorted(
        [routed for routed in TICKETS.values() for _ in range(2)]
    )
    assert all(error is None for _, _, _, error, _ in rows)
    assert [session for _, session, _, _, _ in rows] == [run_id for run_id, *_ in rows]
    # Each run's execution was found by the session it was sent in (no model ran: zero
    # tokens, not unmeasured); had a row's runs all been sent in its first run's session,
    # only that run would be found.
    assert [tokens for *_, tokens in rows] == [0] * len(rows)
