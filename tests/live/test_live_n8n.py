"""The pipeline against a real n8n 2.41: Data Tables in and out, webhooks, versions."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.n8n_api.client import DataTableColumn, N8nClient
from n8n_deepeval_pipeline.orchestration.automation import current_hash
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions, n8n_resource
from n8n_deepeval_pipeline.workflow.hashing import version_key
from tests.live.conftest import use_cli
from tests.live.n8n_server import N8nServer, load_workflow

pytestmark = [pytest.mark.live, pytest.mark.slow]

CASES = [
    {"caseKey": "mul", "question": "What is 6*7?", "expected": "The answer is 42.",
     "tools": '["calculator"]', "split": "test", "path": "agent"},
    {"caseKey": "add", "question": "And 40+2?", "expected": "The answer is 42.",
     "tools": '["calculator"]', "split": "test", "path": "agent"},
    {"caseKey": "hello", "question": "Hello there", "expected": "Echo: Hello there",
     "tools": "[]", "split": "test", "path": "agent"},
    {"caseKey": "train", "question": "not in the test split", "expected": "-",
     "tools": "[]", "split": "train", "path": "agent"},
]  # fmt: skip


def deploy(n8n: N8nServer, name: str, path: str) -> str:
    """Create and publish a copy of a test workflow on its own webhook path."""
    workflow = load_workflow(name)
    for node in workflow["nodes"]:
        if node["type"] == "n8n-nodes-base.webhook":
            node["parameters"]["path"] = path
            node["webhookId"] = str(uuid.uuid4())
    workflow["name"] = f"{workflow['name']} {path.split('-')[0]}"  # no token in the name
    workflow_id = n8n.create_workflow(workflow)
    n8n.wait_for_webhook(path, body={"input": "warm-up"})
    return workflow_id


@pytest.fixture(scope="module")
def live(n8n: N8nServer) -> dict[str, Any]:
    """An echo agent on a secret-looking path, error and slow agents, a dataset table."""
    token = uuid.uuid4().hex
    ids = {
        "agent": deploy(n8n, "agent_echo", f"agent-{token}"),
        "error": deploy(n8n, "agent_error", f"error-{token}"),
        "slow": deploy(n8n, "agent_slow", f"slow-{token}"),
    }
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        columns = [DataTableColumn(name=name) for name in CASES[0]]
        table = client.create_data_table(f"cases_{token[:8]}", columns)
        client.insert_rows(table.id, CASES)
    return {"token": token, "ids": ids, "table": table.name}


@pytest.fixture
def environment(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_cli(monkeypatch, n8n, tmp_path / "home", workers=2)


def benchmark_file(tmp_path: Path, live: dict[str, Any], n8n: N8nServer, **extra: Any) -> Path:
    document = {
        "name": "live_agent",
        "workflow": {"id": live["ids"]["agent"]},
        "dataset": {
            "dataTable": live["table"],
            "idColumn": "caseKey",
            "columnMapping": {"input": "question", "expectedOutput": "expected",
                              "expectedTools": "tools"},
            "filters": {"split": "test"},
        },
        "runsPerRow": 2,
        "target": {"type": "n8n_webhook", "url": n8n.webhook_url(f"agent-{live['token']}"),
                   "timeoutS": 3, "maxConcurrency": 3},
        "metrics": [{"metric": "exact_match"}, {"metric": "tool_correctness"}],
        **extra,
    }  # fmt: skip
    path = tmp_path / "live.benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def query(database: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(database), read_only=True) as connection:
        return connection.execute(sql).fetchall()


def test_a_benchmark_reads_a_data_table_calls_the_webhook_and_writes_results_back(
    n8n: N8nServer,
    live: dict[str, Any],
    environment: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sink = {
        "runAggregates": {"dataTable": f"runs_{live['token'][:8]}", "writeMode": "upsert"},
        "consistencyStats": {"dataTable": f"consistency_{live['token'][:8]}"},
    }
    path = benchmark_file(tmp_path, live, n8n, sink=sink)
    document = yaml.safe_load(path.read_text())
    secret_url = document["target"].pop("url")
    document["target"]["urlEnv"] = "LIVE_AGENT_WEBHOOK"
    path.write_text(yaml.safe_dump(document))
    monkeypatch.setenv("LIVE_AGENT_WEBHOOK", secret_url)
    result = CliRunner().invoke(main, ["run", str(path)], catch_exceptions=False)
    print(result.output)  # the closing note quotes this summary
    assert result.exit_code == 0, result.output
    assert "runs 6 · pass rate 100.0% (allPass)" in result.output
    outputs = query(environment, "select run_id, actual_output from live_agent.agent_outputs")
    assert sorted(text for _, text in outputs) == sorted(
        ["The answer is 42."] * 4 + ["Echo: Hello there"] * 2
    )
    steps = query(
        environment,
        "select intermediate_steps from live_agent.agent_outputs where run_id like '%:mul:%'",
    )
    assert json.loads(steps[0][0])[0]["action"]["tool"] == "calculator"
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        table = client.find_data_table(sink["runAggregates"]["dataTable"])
        assert table is not None
        written = client.rows(table.id)
        # a second run upserts the same runs: no duplicates
        assert CliRunner().invoke(main, ["run", str(path)]).exit_code == 0
        again = client.rows(table.id)
    assert sorted(row["runId"] for row in written) == sorted(run_id for run_id, _ in outputs)
    assert {row["overallSuccess"] for row in written} == {True}
    assert len(again) == len(written) == 6
    # The webhook's token is in no output, table, log or Dagster storage.
    token = live["token"].encode()
    assert live["token"] not in result.output
    assert not [
        file for file in tmp_path.rglob("*") if file.is_file() and token in file.read_bytes()
    ]


def test_an_edit_in_n8n_becomes_a_new_partition_whose_outputs_differ(
    n8n: N8nServer, live: dict[str, Any], environment: Path, tmp_path: Path
) -> None:
    path_name = f"edited-{live['token']}"
    workflow_id = deploy(n8n, "agent_echo", path_name)
    path = benchmark_file(tmp_path, live, n8n, workflow={"id": workflow_id})
    document = yaml.safe_load(path.read_text())
    document["target"]["url"] = n8n.webhook_url(path_name)
    path.write_text(yaml.safe_dump(document))
    before = CliRunner().invoke(main, ["run", str(path), "--json"], catch_exceptions=False)
    assert before.exit_code == 0, before.output
    old = json.loads(before.stdout)

    edited = n8n.api("GET", f"/workflows/{workflow_id}").json()
    code = next(node for node in edited["nodes"] if node["name"] == "Agent")
    code["parameters"]["jsCode"] = code["parameters"]["jsCode"].replace("Echo: ", "Echo v2: ")
    body = {key: edited[key] for key in ("name", "nodes", "connections", "settings")}
    assert n8n.api("PUT", f"/workflows/{workflow_id}", json=body).status_code == 200

    defs = build_definitions([path])
    sensor = defs.resolve_sensor_def("live_agent__workflow_changed")
    with dg.DagsterInstance.get() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"n8n": n8n_resource()})
        tick = sensor(context)
    assert isinstance(tick, dg.SensorResult)
    (request,) = tick.dynamic_partitions_requests
    (new,) = request.partition_keys
    assert new != version_key(old["workflow_hash"])
    assert [run.partition_key for run in tick.run_requests] == [new]
    resource = n8n_resource().process_config_and_initialize()
    assert new == version_key(current_hash(load_benchmark(path), resource))

    after = CliRunner().invoke(main, ["run", str(path), "--json"], catch_exceptions=False)
    assert after.exit_code == 0, after.output
    latest = json.loads(after.stdout)
    print(f"old {old['workflow_hash']} pass rate {old['pass_rate']:.3f}; "
          f"new {latest['workflow_hash']} pass rate {latest['pass_rate']:.3f}")  # fmt: skip
    assert version_key(latest["workflow_hash"]) == new
    assert (old["pass_rate"], latest["pass_rate"]) == (1.0, pytest.approx(4 / 6))
    outputs = query(
        environment,
        "select workflow_hash, actual_output from live_agent.agent_outputs "
        "where run_id like '%:hello:0'",
    )
    assert sorted(outputs) == sorted(
        [
            (old["workflow_hash"], "Echo: Hello there"),
            (latest["workflow_hash"], "Echo v2: Hello there"),
        ]
    )


def test_failed_and_slow_calls_are_target_error_rows_and_the_rest_is_scored(
    n8n: N8nServer, live: dict[str, Any], environment: Path, tmp_path: Path
) -> None:
    token = live["token"]
    url = n8n.base_url + "/webhook/{{ row.path }}-" + token
    path = benchmark_file(tmp_path, live, n8n)
    document = yaml.safe_load(path.read_text())
    document["target"]["url"] = url
    path.write_text(yaml.safe_dump(document))
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        table = client.find_data_table(live["table"])
        assert table is not None
        rows = {row["caseKey"]: row for row in client.rows(table.id)}
        client.upsert_row(table.id, {"caseKey": "add"}, {**_plain(rows["add"]), "path": "error"})
        client.upsert_row(table.id, {"caseKey": "hello"}, {**_plain(rows["hello"]), "path": "slow"})
    try:
        result = CliRunner().invoke(main, ["run", str(path)], catch_exceptions=False)
    finally:
        with N8nClient(n8n.base_url, n8n.api_key) as client:
            for key in ("add", "hello"):
                client.upsert_row(
                    table.id, {"caseKey": key}, {**_plain(rows[key]), "path": "agent"}
                )
    assert result.exit_code == 3, result.output  # most calls failed: incomplete, not a success
    assert result.stderr.splitlines()[-1] == (
        "incomplete: 66.7% of the workflow calls failed (4 of 6 runs), "
        "above checks.maxErrorRate 5.0%"
    )
    errors = query(
        environment, "select run_id, error from live_agent.agent_outputs where error is not null"
    )
    by_run = {run_id.split(":", 1)[1]: error for run_id, error in errors}
    failed = "target_error: HTTP 200: error in the answer: upstream model failed"
    timed_out = "target_error: timeout after 3 s"
    assert by_run == {"add:0": failed, "add:1": failed, "hello:0": timed_out, "hello:1": timed_out}
    kinds = query(
        environment,
        "select error_kind, count(*) from live_agent.metric_scores "
        "group by 1 order by 1 nulls first",
    )
    assert kinds == [(None, 4), ("target_error", 8)]  # 6 runs × 2 metrics, nothing lost


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in CASES[0]}


def test_steps_missing_from_the_answer_are_read_from_the_execution(
    n8n: N8nServer, live: dict[str, Any], environment: Path, tmp_path: Path
) -> None:
    workflow = load_workflow("agent_echo")
    webhook = next(node for node in workflow["nodes"] if node["name"] == "Webhook")
    webhook["parameters"]["path"] = path_name = f"stepless-{live['token']}"
    webhook["webhookId"] = str(uuid.uuid4())
    workflow["name"] = "live agent without steps in its answer"
    workflow["nodes"].append(
        {"id": str(uuid.uuid4()), "name": "Format", "type": "n8n-nodes-base.code",
         "typeVersion": 2, "position": [480, 0],
         "parameters": {"jsCode": "return [{json: {output: $input.first().json.output}}];"}}
    )  # fmt: skip
    workflow["connections"]["Agent"] = {"main": [[{"node": "Format", "type": "main", "index": 0}]]}
    workflow_id = n8n.create_workflow(workflow)
    n8n.wait_for_webhook(path_name, body={"input": "warm-up"})
    path = benchmark_file(tmp_path, live, n8n, workflow={"id": workflow_id})
    document = yaml.safe_load(path.read_text())
    document["target"].update(url=n8n.webhook_url(path_name), stepsFromExecution=True)
    path.write_text(yaml.safe_dump(document))
    result = CliRunner().invoke(main, ["run", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    steps = dict(
        query(environment, "select run_id, intermediate_steps from live_agent.agent_outputs")
    )
    by_case = {run_id.split(":")[1]: json.loads(text or "null") for run_id, text in steps.items()}
    assert by_case["mul"][0]["action"]["tool"] == "calculator"
    assert by_case["hello"] == []
    assert "tool_correctness   1.000" in result.output
