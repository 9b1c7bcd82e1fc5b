"""Online evaluation on the real n8n: production executions scored as they happen.

A webhook workflow and the chat agent (FakeOpenAI as its model) are called as users would
call them; the online sensor reads the executions n8n stored, through the API, and the
online job scores them (the pattern metric is real, the conversational one dry-run).
"""

from __future__ import annotations

import copy
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from n8n_deepeval_pipeline import DatasetRow
from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.n8n_api.webhook import WebhookCaller
from n8n_deepeval_pipeline.orchestration.automation import current_hash
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions, n8n_resource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.tables.rows import AgentOutput
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer
from tests.live.test_live_traffic import ECHO_WORKFLOW, _chat, wait_for_executions
from tests.orchestration.conftest import query

pytestmark = [pytest.mark.live, pytest.mark.slow]

PATH = "online-echo"
BENCHMARK = """
name: {name}
workflow: {{id: {workflow_id}}}
dataset: {{path: dataset.jsonl, idColumn: rowId}}
target: {{type: n8n_workflow, startNodeName: {start}, endNodeName: {end}}}
metrics:
  - metric: pattern_match
    label: no_refund
    pattern: "^(?!.*[Rr]efund issued).*$"
  - metric: turn_relevancy
online:
  metrics: [{metric}]
  sessionIdleMinutes: 0.05
"""


@pytest.fixture
def env(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_cli(monkeypatch, n8n, tmp_path / "home")


def benchmark(tmp_path: Path, **fields: str) -> Path:
    folder = tmp_path / fields["name"]
    folder.mkdir()
    (folder / "dataset.jsonl").write_text('{"rowId": "r1", "input": "hello"}\n')
    path = folder / "benchmark.yaml"
    path.write_text(BENCHMARK.format(**fields))
    return path


def tick(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, cursor: str | None):
    sensor = defs.resolve_sensor_def(f"{name}__online")
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"n8n": n8n_resource()}
    )
    return sensor(context)


def items(request: dg.RunRequest, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = request.run_config["ops"][f"{name}__online_scores"]["config"][
        "items"
    ]
    return found


def execute(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, request: dg.RunRequest):
    return defs.resolve_job_def(f"{name}__online").execute_in_process(
        partition_key=request.partition_key, run_config=request.run_config, instance=instance
    )


def as_yesterday(request: dg.RunRequest, name: str) -> dg.RunRequest:
    """The same items, as if their executions had run a day earlier."""
    config = copy.deepcopy(request.run_config)
    for item in items(dg.RunRequest(run_config=config), name):
        started = datetime.fromisoformat(item["started_at"]) - timedelta(days=1)
        item["started_at"] = started.isoformat()
    day = (date.fromisoformat(request.partition_key or "") - timedelta(days=1)).isoformat()
    return request._replace(run_config=config, partition_key=day)


def chat_workflow(n8n: N8nServer, llm: FakeOpenAI, name: str, webhook_id: str) -> tuple[str, str]:
    """The chat agent (FakeOpenAI its model) behind a public Chat Trigger: its id, chat URL."""
    workflow = n8n.chat_agent(n8n.openai_credential(f"Fake OpenAI ({name})", llm.base_url))
    workflow["name"] = name
    trigger = workflow["nodes"][0]
    trigger["webhookId"] = webhook_id
    trigger["parameters"] = {"public": True, "options": {"responseMode": "lastNode"}}
    return n8n.create_workflow(workflow), n8n.webhook_url(f"{webhook_id}/chat")


def tick_once_idle(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, cursor: str):
    """A tick that hands on the sessions gone idle (sessionIdleMinutes: 3 s)."""
    ticked = tick(defs, name, instance, cursor)
    if not ticked.run_requests:  # still within sessionIdleMinutes
        time.sleep(4)
        ticked = tick(defs, name, instance, ticked.cursor)
    return ticked


def test_new_executions_are_scored_once_over_two_ticks_and_a_restart_and_a_drop_warns(
    n8n: N8nServer, env: Path, tmp_path: Path
) -> None:
    workflow = copy.deepcopy(ECHO_WORKFLOW)
    workflow["name"] = "online echo"
    workflow["nodes"][0]["parameters"]["path"] = PATH
    workflow["nodes"][0]["webhookId"] = "5e0c1f7a-3b2d-4c1e-9f00-00000000e021"
    workflow_id = n8n.create_workflow(workflow)
    name = "live_online"
    file = benchmark(tmp_path, name=name, workflow_id=workflow_id, start="Answer", end="Answer",
                     metric="no_refund")  # fmt: skip
    try:
        assert n8n.wait_for_webhook(PATH, body={"question": "before"}).status_code == 200
        wait_for_executions(n8n, workflow_id, 1)
        defs = build_definitions([file])
        with dg.instance_for_test() as instance:
            first = tick(defs, name, instance, None)
            assert first.run_requests == []  # traffic from before the sensor is not scored
            for question in ("Where is my order?", "Can I change the address?"):
                n8n.call_webhook(PATH, {"question": question})
            wait_for_executions(n8n, workflow_id, 3)
            second = tick(defs, name, instance, first.cursor)
            (request,) = second.run_requests
            assert len(items(request, name)) == 2
            assert tick(defs, name, instance, second.cursor).run_requests == []
            # a new process (the cursor read back): nothing twice, and the next one once
            restarted = build_definitions([file])
            assert tick(restarted, name, instance, second.cursor).run_requests == []
            # yesterday: the first two, all passing; today: a regression planted in the traffic
            execute(restarted, name, instance, as_yesterday(request, name))
            for number in range(3):
                n8n.call_webhook(PATH, {"question": f"Refund issued for order {number}?"})
            wait_for_executions(n8n, workflow_id, 6)
            third = tick(restarted, name, instance, second.cursor)
            (today,) = third.run_requests
            assert len(items(today, name)) == 3
            ran = execute(restarted, name, instance, today)
            execute(restarted, name, instance, today)  # the same tick's run again
            checks = {check.check_name: check for check in ran.get_asset_check_evaluations()}
            # one version served all the traffic: nothing to compare it with
            version = checks["no_version_regression"]
            assert version.passed and version.metadata["verdict"].value == "insufficient_data"
            check = checks["no_pass_rate_drop"]
            print(check.metadata)  # the closing note quotes the day's check
            assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
            assert check.metadata["verdict"].value in ("regression", "likely_regression")
        # the version the benchmark's own partitions name (n8n's published workflow)
        resource = N8nResource(base_url=n8n.base_url, api_key=n8n.api_key)
        current = current_hash(load_benchmark(file), resource)
        rows = query(
            env,
            f"select strftime(started_at, '%Y-%m-%d'), workflow_hash, count(*), "
            f"count(distinct score_id), sum(success::int) from {name}.online_scores "
            "group by all order by 1",
        )
        today_key = date.today().isoformat()
        yesterday_key = (date.today() - timedelta(days=1)).isoformat()
        assert rows == [(yesterday_key, current, 2, 2, 2), (today_key, current, 3, 3, 0)]
        summary = query(env, f"select * from {name}.online_summary order by day")
        print(summary)  # the online summary of a day, for the closing note
        assert [(row[2], row[5]) for row in summary] == [(2, 2), (3, 0)]
    finally:
        n8n.delete_workflow(workflow_id)


def test_a_chat_session_is_scored_as_one_conversation_once_idle(
    n8n: N8nServer, env: Path, tmp_path: Path
) -> None:
    name = "live_online_chat"
    with FakeOpenAI() as llm:
        workflow_id, url = chat_workflow(
            n8n, llm, "online chat agent", "5e0c1f7a-3b2d-4c1e-9f00-00000000e022"
        )
        file = benchmark(tmp_path, name=name, workflow_id=workflow_id, start="AI Agent",
                         end="Format", metric="turn_relevancy")  # fmt: skip
        try:
            defs = build_definitions([file])
            with dg.instance_for_test() as instance:
                started = tick(defs, name, instance, None)
                for message in ("Hello", "What is 6*7?", "Thanks"):
                    body = {"action": "sendMessage", "sessionId": "online-a", "chatInput": message}
                    assert _chat(url, body).status_code == 200
                wait_for_executions(n8n, workflow_id, 3)
                opened = tick_once_idle(defs, name, instance, started.cursor)
                (request,) = opened.run_requests
                (item,) = items(request, name)
                assert (item["kind"], item["key"], len(item["execution_ids"])) == (
                    "session", "online-a", 3)  # fmt: skip
                assert item["execution_ids"] == sorted(item["execution_ids"])
                execute(defs, name, instance, request)
                assert tick(defs, name, instance, opened.cursor).run_requests == []
                # the user goes on with the chat: it is scored again whole, replacing its row
                body = {"action": "sendMessage", "sessionId": "online-a", "chatInput": "Bye"}
                assert _chat(url, body).status_code == 200
                wait_for_executions(n8n, workflow_id, 4)
                (again,) = tick_once_idle(defs, name, instance, opened.cursor).run_requests
                (whole,) = items(again, name)
                assert whole["execution_ids"][:3] == item["execution_ids"]
                assert len(whole["execution_ids"]) == 4
                execute(defs, name, instance, again)
            rows = query(
                env,
                f"select score_id, metric, error_kind, json_array_length(execution_ids) "
                f"from {name}.online_scores",
            )
            first = item["execution_ids"][0]
            assert rows == [(f"session:online-a:{first}", "turn_relevancy", None, 4)]
        finally:
            n8n.delete_workflow(workflow_id)


def webhook_agent(n8n: N8nServer, credential_id: str, path: str) -> dict[str, Any]:
    """The chat agent behind a Webhook, its memory keyed by the request's body.sessionId."""
    workflow = n8n.chat_agent(credential_id)
    webhook = {
        "name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2.1,
        "webhookId": "5e0c1f7a-3b2d-4c1e-9f00-00000000e023", "position": [0, 0],
        "parameters": {"httpMethod": "POST", "path": path, "responseMode": "lastNode",
                       "options": {}},
    }  # fmt: skip
    workflow["nodes"][0] = webhook
    nodes = {node["name"]: node for node in workflow["nodes"]}
    nodes["AI Agent"]["parameters"].update(promptType="define", text="={{ $json.body.message }}")
    nodes["Simple Memory"]["parameters"] = {
        "sessionIdType": "customKey", "sessionKey": "={{ $json.body.sessionId }}",
        "contextWindowLength": 5,
    }  # fmt: skip
    connections = workflow["connections"]
    connections["Webhook"] = connections.pop("When chat message received")
    return workflow


def test_a_webhook_agents_chats_are_scored_by_the_session_its_memory_keys(
    n8n: N8nServer, env: Path, tmp_path: Path
) -> None:
    name, path = "live_online_webhook_chat", "online-webhook-chat"
    with FakeOpenAI() as llm:
        credential = n8n.openai_credential("Fake OpenAI (webhook chat)", llm.base_url)
        workflow_id = n8n.create_workflow(webhook_agent(n8n, credential, path))
        file = benchmark(tmp_path, name=name, workflow_id=workflow_id, start="AI Agent",
                         end="Format", metric="turn_relevancy")  # fmt: skip
        try:
            defs = build_definitions([file])
            with dg.instance_for_test() as instance:
                started = tick(defs, name, instance, None)
                url = n8n.webhook_url(path)
                for session, message in (("w-a", "Hello"), ("w-b", "Hi"), ("w-a", "6*7?")):
                    body = {"sessionId": session, "message": message}
                    assert _chat(url, body).status_code == 200
                wait_for_executions(n8n, workflow_id, 3)
                (request,) = tick_once_idle(defs, name, instance, started.cursor).run_requests
                found = sorted((i["key"], len(i["execution_ids"])) for i in items(request, name))
                assert found == [("w-a", 2), ("w-b", 1)]
                execute(defs, name, instance, request)
            rows = query(env, f"select item_key, metric, error_kind from {name}.online_scores")
            assert sorted(rows) == [("w-a", "turn_relevancy", None),
                                    ("w-b", "turn_relevancy", None)]  # fmt: skip
        finally:
            n8n.delete_workflow(workflow_id)


def benchmark_calls(url: str, body: dict[str, Any], inputs: list[str]) -> list[AgentOutput]:
    """The workflow called as a benchmark calls it: a run per input, each its own session."""
    target = WebhookTarget.model_validate({"type": "n8n_webhook", "url": url, "body": body})
    rows = [
        DatasetRow(workflow_hash="b" * 64, row_id=f"r{n}", position=n, input=text, raw={})
        for n, text in enumerate(inputs, start=1)
    ]
    caller = WebhookCaller(target, url, {})
    try:
        return caller.outputs(expanded_runs(rows, 1, "live"), {row.row_id: row for row in rows})
    finally:
        caller.close()


def test_the_pipelines_own_calls_are_not_scored_as_production(
    n8n: N8nServer, env: Path, tmp_path: Path
) -> None:
    """A benchmark's runs over the webhook and a simulation's chat, made while the sensor
    ticks, are n8n executions like a user's (mode webhook): only the users' are scored."""
    workflow = copy.deepcopy(ECHO_WORKFLOW)
    workflow["name"] = "online own calls"
    workflow["nodes"][0]["parameters"]["path"] = "online-own"
    workflow["nodes"][0]["webhookId"] = "5e0c1f7a-3b2d-4c1e-9f00-00000000e024"
    workflow_id = n8n.create_workflow(workflow)
    name = "live_online_own"
    file = benchmark(tmp_path, name=name, workflow_id=workflow_id, start="Answer", end="Answer",
                     metric="no_refund")  # fmt: skip
    try:
        assert n8n.wait_for_webhook("online-own", body={"question": "before"}).status_code == 200
        wait_for_executions(n8n, workflow_id, 1)
        defs = build_definitions([file])
        with dg.instance_for_test() as instance:
            started = tick(defs, name, instance, None)
            n8n.call_webhook("online-own", {"question": "Where is my order?"})
            # the benchmark's own body: no evalContext in it, the header marks the call
            outputs = benchmark_calls(
                n8n.webhook_url("online-own"), {"question": "{{ input }}"}, ["a", "b", "c"]
            )
            assert [output.actual_output for output in outputs] == ["Echo: a", "Echo: b", "Echo: c"]
            n8n.call_webhook("online-own", {"question": "Can I change the address?"})
            wait_for_executions(n8n, workflow_id, 6)
            (request,) = tick(defs, name, instance, started.cursor).run_requests
            scored = [n8n.api("GET", f"/executions/{item['key']}", {"includeData": "true"})
                      .json() for item in items(request, name)]  # fmt: skip
            questions = [
                execution["data"]["resultData"]["runData"]["Webhook"][0]["data"]["main"][0][0][
                    "json"]["body"]["question"]
                for execution in scored
            ]  # fmt: skip
            assert questions == ["Where is my order?", "Can I change the address?"]
    finally:
        n8n.delete_workflow(workflow_id)
    name = "live_online_own_chat"
    with FakeOpenAI() as llm:
        chat_id, url = chat_workflow(
            n8n, llm, "online own chat", "5e0c1f7a-3b2d-4c1e-9f00-00000000e025"
        )
        file = benchmark(tmp_path, name=name, workflow_id=chat_id, start="AI Agent",
                         end="Format", metric="turn_relevancy")  # fmt: skip
        try:
            defs = build_definitions([file])
            with dg.instance_for_test() as instance:
                started = tick(defs, name, instance, None)
                user = {"action": "sendMessage", "sessionId": "user-1", "chatInput": "Hello"}
                assert _chat(url, user).status_code == 200
                # a Chat Trigger keeps the body alone: the evalContext the pipeline adds
                body = {"action": "sendMessage", "chatInput": "{{ input }}"}
                own = benchmark_calls(url, body, ["I want a refund"])
                assert own[0].error is None
                wait_for_executions(n8n, chat_id, 2)
                (request,) = tick_once_idle(defs, name, instance, started.cursor).run_requests
                assert [(i["kind"], i["key"]) for i in items(request, name)] == [
                    ("session", "user-1")
                ]
        finally:
            n8n.delete_workflow(chat_id)
