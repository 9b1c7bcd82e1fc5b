"""Online evaluation in Dagster: the sensor on FakeN8nApi (a fake of n8n's public API), the
daily assets, their upsert and the drop check."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
    PostgresResultsIOManager,
)
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import UPSERT_KEY
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from tests.n8n_api.fake_n8n import FakeN8nApi
from tests.n8n_api.test_traffic_dataset import TRIGGER, WEBHOOK_AGENT, run
from tests.orchestration.conftest import query

DAY = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
VERSIONS = "support_online__workflow_hash"  # the benchmark's version partitions
BENCHMARK = """
name: support_online
workflow: {id: wf}
dataset: {path: dataset.jsonl, idColumn: rowId}
target: {type: n8n_workflow, startNodeName: AI Agent, endNodeName: Reply}
metrics:
  - metric: pattern_match
    label: no_refund
    pattern: "^(?!.*[Rr]efund issued).*$"
online:
  metrics: [no_refund]
  maxCostUsdPerDay: 1.0
"""
CHAT_AGENT = {
    "name": "chat",
    "nodes": [
        {"name": TRIGGER, "type": "@n8n/n8n-nodes-langchain.chatTrigger", "typeVersion": 1.1,
         "parameters": {}},
        {"name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 3.1,
         "parameters": {}},
    ],
    "connections": {TRIGGER: {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]}},
}  # fmt: skip
CHAT_BENCHMARK = """
name: chat_online
workflow: {id: chat}
dataset: {path: dataset.jsonl, idColumn: rowId}
target: {type: n8n_workflow, startNodeName: AI Agent, endNodeName: AI Agent}
metrics:
  - metric: turn_relevancy
online:
  metrics: [turn_relevancy]
  sessionIdleMinutes: 5
"""


def webhook_execution(
    number: int, answer: str, started: datetime, workflow: dict[str, Any] = WEBHOOK_AGENT
) -> dict[str, Any]:
    body = {"question": f"question {number}", "customer": "C-7"}
    return {
        "id": str(number),
        "workflowId": "wf",
        "status": "success",
        "mode": "webhook",
        "startedAt": started.isoformat(),
        "workflowData": workflow,
        "data": {
            "resultData": {
                "runData": {
                    "Webhook": run({"body": body}),
                    "AI Agent": run({"output": answer}),
                    "Reply": run({"output": answer}),
                },
                "lastNodeExecuted": "Reply",
            }
        },
    }


def chat_execution(number: int, session: str, message: str, started: datetime) -> dict[str, Any]:
    return {
        "id": str(number),
        "workflowId": "chat",
        "status": "success",
        "mode": "webhook",
        "startedAt": started.isoformat(),
        "data": {
            "resultData": {
                "runData": {
                    TRIGGER: run(
                        {"sessionId": session, "action": "sendMessage", "chatInput": message}
                    ),
                    "AI Agent": run({"output": f"Echo: {message}"}),
                },
                "lastNodeExecuted": "AI Agent",
            }
        },
    }


@pytest.fixture
def n8n(monkeypatch: pytest.MonkeyPatch, environment: Path) -> Iterator[FakeN8nApi]:
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "1")
    with FakeN8nApi() as fake:
        fake.workflows["wf"] = WEBHOOK_AGENT
        fake.workflows["chat"] = CHAT_AGENT
        monkeypatch.setenv("N8N_API_URL", fake.base_url)
        monkeypatch.setenv("N8N_API_KEY", "test-key")
        yield fake


def benchmark_file(tmp_path: Path, text: str = BENCHMARK) -> Path:
    folder = tmp_path / "bench"
    folder.mkdir(exist_ok=True)
    (folder / "dataset.jsonl").write_text('{"rowId": "r1", "input": "hello"}\n')
    path = folder / f"{len(list(folder.glob('*.yaml')))}.benchmark.yaml"
    path.write_text(text)
    return path


def tick(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    fake: FakeN8nApi,
    cursor=None,
    benchmark: str = "support_online",
):
    """One tick of the benchmark's online sensor on the fake n8n."""
    sensor = defs.resolve_sensor_def(f"{benchmark}__online")
    n8n = N8nResource(base_url=fake.base_url, api_key="test-key")
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"n8n": n8n})
    return sensor(context)


def scored(result) -> list[list[str]]:
    return [
        [item["key"] for item in request.run_config["ops"]["support_online__online_scores"][
            "config"]["items"]]
        for request in result.run_requests
    ]  # fmt: skip


def test_the_sensor_scores_new_executions_once_over_ticks_and_a_restart(n8n, tmp_path):
    defs = build_definitions([benchmark_file(tmp_path)])
    n8n.executions = [webhook_execution(n, "fine", DAY + timedelta(minutes=n)) for n in (1, 2)]
    with dg.instance_for_test() as instance:
        first = tick(defs, instance, n8n)
        assert (
            first.run_requests == []
            and "starts after execution 2" in first.skip_reason.skip_message
        )
        n8n.executions += [webhook_execution(n, "fine", DAY + timedelta(minutes=n)) for n in (3, 4)]
        second = tick(defs, instance, n8n, first.cursor)
        assert scored(second) == [["3", "4"]]
        assert second.run_requests[0].partition_key == "2026-11-30"
        assert tick(defs, instance, n8n, second.cursor).run_requests == []
        # a new process reads the stored cursor back: nothing again, then only the new one
        restarted = build_definitions([benchmark_file(tmp_path)])
        n8n.executions.append(webhook_execution(5, "fine", DAY + timedelta(days=1)))
        third = tick(restarted, instance, n8n, second.cursor)
        assert scored(third) == [["5"]] and third.run_requests[0].partition_key == "2026-12-01"


def pipelines_own(execution: dict[str, Any], trigger: str = "Webhook") -> dict[str, Any]:
    """The execution as a benchmark's call leaves it: marked as the pipeline marks its calls."""
    marked = copy.deepcopy(execution)
    (item,) = marked["data"]["resultData"]["runData"][trigger][0]["data"]["main"][0]
    run_id = f"{'a' * 64}:r{execution['id']}:0"
    if trigger == "Webhook":  # a Webhook node keeps the headers (names lower-cased)
        item["json"]["headers"] = {"x-n8n-deepeval-run": run_id}
    else:  # a Chat Trigger keeps the body alone
        item["json"]["evalContext"] = {"runId": run_id, "isEvalRun": True}
    return marked


def test_the_benchmarks_own_calls_are_not_scored_as_production(n8n, tmp_path):
    """A benchmark ran over the webhook while the sensor ticked: 12 of 24 executions were its
    own (they were scored as production, and paid for)."""
    defs = build_definitions([benchmark_file(tmp_path)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n).cursor
        for number in range(1, 25):
            found = webhook_execution(number, "fine", DAY + timedelta(minutes=number))
            n8n.executions.append(pipelines_own(found) if number % 2 else found)
        result = tick(defs, instance, n8n, cursor)
        assert scored(result) == [[str(number) for number in range(2, 25, 2)]]
        assert json.loads(result.cursor)["last_id"] == 24


def test_a_simulated_conversation_is_not_a_production_chat(n8n, tmp_path):
    defs = build_definitions([benchmark_file(tmp_path, CHAT_BENCHMARK)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n, None, "chat_online").cursor
        started = datetime.now(UTC) - timedelta(minutes=20)
        simulated = f"{'a' * 64}:scenario:0:thread-1"  # the session a simulation sends in
        n8n.executions = [
            chat_execution(1, "user", "Hello", started),
            pipelines_own(chat_execution(2, simulated, "I want a refund", started), TRIGGER),
            pipelines_own(chat_execution(3, simulated, "Order A3301", started), TRIGGER),
            chat_execution(4, "user", "Thanks", started),
        ]
        (request,) = tick(defs, instance, n8n, cursor, "chat_online").run_requests
        items = request.run_config["ops"]["chat_online__online_scores"]["config"]["items"]
        assert [(i["kind"], i["key"], i["execution_ids"]) for i in items] == [
            ("session", "user", [1, 4])
        ]


def test_a_waiting_execution_is_scored_by_the_tick_after_it_ended(n8n, tmp_path):
    defs = build_definitions([benchmark_file(tmp_path)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n).cursor
        n8n.executions = [webhook_execution(n, "fine", DAY + timedelta(minutes=n)) for n in (1, 2)]
        n8n.executions[0]["status"] = "waiting"  # a Wait node, for a person's answer
        first = tick(defs, instance, n8n, cursor)
        assert scored(first) == [["2"]]
        assert tick(defs, instance, n8n, first.cursor).run_requests == []  # still waiting
        n8n.executions[0]["status"] = "success"
        assert scored(tick(defs, instance, n8n, first.cursor)) == [["1"]]


def test_the_sensor_skips_once_the_day_s_judge_cost_reached_the_cap(n8n, tmp_path):
    defs = build_definitions([benchmark_file(tmp_path)])
    with dg.instance_for_test() as instance:
        started = tick(defs, instance, n8n)
        n8n.executions = [webhook_execution(1, "fine", DAY)]
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                asset_key=dg.AssetKey(["support_online", "online_scores"]),
                partition="2026-11-30",
                metadata={"cost_usd": 1.25},
            )
        )
        capped = tick(defs, instance, n8n, started.cursor)
        assert isinstance(capped, dg.SkipReason)
        assert (
            "judge cost today $1.2500 reached online.maxCostUsdPerDay $1.0000"
            in capped.skip_message
        )


def _run_tick(defs, instance, request):
    return defs.resolve_job_def("support_online__online").execute_in_process(
        partition_key=request.partition_key, run_config=request.run_config, instance=instance
    )


def as_run(workflow: dict[str, Any]) -> dict[str, Any]:
    """The copy n8n stores with an execution: every parameter's default filled in."""
    ran = copy.deepcopy(workflow)
    ran["nodes"][0]["parameters"].update(authentication="none", responseMode="onReceived")
    return ran


@pytest.mark.slow  # the worker pool scores
def test_scores_are_upserted_tagged_with_their_version_and_a_new_version_s_drop_is_flagged(
    n8n, tmp_path, environment
):
    defs = build_definitions([benchmark_file(tmp_path)])
    edited = copy.deepcopy(WEBHOOK_AGENT)
    edited["nodes"][1]["parameters"]["text"] = "={{ $json.body.question }} (settle refunds)"
    n8n.workflows["wf"] = {**WEBHOOK_AGENT, "active": True, "activeVersionId": "v1"}
    n8n.versions["v1"] = WEBHOOK_AGENT  # n8n's history: the saved nodes and connections
    old, new = workflow_hash(WEBHOOK_AGENT), workflow_hash(edited)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(VERSIONS, [old[:12]])  # the benchmark ran v1
        cursor = tick(defs, instance, n8n).cursor
        # v2 was published, served today's traffic and was rolled back between two ticks, and
        # n8n pruned v1 from its history meanwhile: v1 is named from the cursor (seen
        # current), v2 from n8n's history
        n8n.versions = {"v2": edited}
        yesterday, today = DAY - timedelta(days=1), DAY
        n8n.executions = [
            {**webhook_execution(n, "Your order ships Monday.", yesterday + timedelta(minutes=n),
                                 as_run(WEBHOOK_AGENT)), "workflowVersionId": "v1"}
            for n in range(1, 11)
        ]  # fmt: skip
        n8n.executions += [
            {**webhook_execution(n, "Refund issued, sorry!", today + timedelta(minutes=n),
                                 as_run(edited)), "workflowVersionId": "v2"}
            for n in range(11, 21)
        ]  # fmt: skip
        result = tick(defs, instance, n8n, cursor)
        assert n8n.versions_served == 1  # v2, once for its ten executions
        # v2 served production traffic before the benchmark ran it: registered as a version
        (register,) = result.dynamic_partitions_requests
        assert (register.partitions_def_name, register.partition_keys) == (VERSIONS, [new[:12]])
        instance.add_dynamic_partitions(VERSIONS, register.partition_keys)  # as the daemon does
        assert [r.partition_key for r in result.run_requests] == ["2026-11-29", "2026-11-30"]
        runs = [_run_tick(defs, instance, request) for request in result.run_requests]
        _run_tick(defs, instance, result.run_requests[1])  # a tick's run again: no duplicates
        # a later run of the same day adds to its rows instead of replacing the partition
        config = copy.deepcopy(result.run_requests[1].run_config)
        items = config["ops"]["support_online__online_scores"]["config"]["items"]
        del items[5:]
        _run_tick(defs, instance, result.run_requests[1]._replace(run_config=config))
        rows = query(
            environment,
            "select strftime(started_at, '%Y-%m-%d'), workflow_hash, n8n_version_id, "
            "version_match, count(*), count(distinct score_id), sum(success::int) "
            "from support_online.online_scores group by all order by 1",
        )
        assert rows == [
            ("2026-11-29", old, "v1", "version_id", 10, 10, 10),
            ("2026-11-30", new, "v2", "version_id", 10, 10, 0),
        ]
        (first_drop, first_version) = runs[0].get_asset_check_evaluations()
        assert first_drop.passed  # one day: no window before it to drop from
        assert first_version.passed and first_version.metadata["verdict"].value == (
            "insufficient_data")  # fmt: skip
        checks = {check.check_name: check for check in runs[1].get_asset_check_evaluations()}
        drop, version = checks["no_pass_rate_drop"], checks["no_version_regression"]
        assert not drop.passed and drop.severity == dg.AssetCheckSeverity.WARN
        assert drop.metadata["verdict"].value == "regression"
        # the new version's traffic against the version registered before it, as compare does
        assert not version.passed and version.severity == dg.AssetCheckSeverity.ERROR
        assert version.metadata["verdict"].value == "regression"
        assert (version.metadata["baseline/version"].value,
                version.metadata["candidate/version"].value) == (old[:12], new[:12])  # fmt: skip
        assert (version.metadata["baseline/pass_rate"].value,
                version.metadata["candidate/pass_rate"].value) == (1.0, 0.0)  # fmt: skip
        summary = query(
            environment,
            "select strftime(day, '%Y-%m-%d'), workflow_hash, items, passed, pass_rate "
            "from support_online.online_summary order by 1",
        )
        assert summary == [("2026-11-29", old, 10, 10, 1.0), ("2026-11-30", new, 10, 0, 0.0)]
        materialization = runs[1].asset_materializations_for_node("support_online__online_summary")[
            0
        ]
        assert materialization.metadata["online_pass_rate"].value == 0.0
        assert materialization.metadata["items"].value == 10
        assert materialization.metadata["version_verdict"].value == "regression"


@pytest.mark.slow  # the worker pool scores
def test_an_execution_n8n_names_no_version_of_is_tagged_with_its_stored_copy(
    n8n, tmp_path, environment
):
    defs = build_definitions([benchmark_file(tmp_path)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n).cursor
        # n8n gave no version id (an older n8n), or no longer keeps the version (pruned)
        n8n.executions = [webhook_execution(1, "fine", DAY, as_run(WEBHOOK_AGENT)),
                          {**webhook_execution(2, "fine", DAY, as_run(WEBHOOK_AGENT)),
                           "workflowVersionId": "pruned"}]  # fmt: skip
        result = tick(defs, instance, n8n, cursor)
        assert result.dynamic_partitions_requests == []  # no version to register
        for request in result.run_requests:
            _run_tick(defs, instance, request)
    rows = query(
        environment,
        "select score_id, workflow_hash, n8n_version_id, version_match "
        "from support_online.online_scores order by 1",
    )
    copy_hash = workflow_hash(as_run(WEBHOOK_AGENT))
    assert copy_hash != workflow_hash(WEBHOOK_AGENT)
    assert rows == [
        ("execution:1", copy_hash, None, "stored_copy"),
        ("execution:2", copy_hash, "pruned", "stored_copy"),
    ]


@pytest.mark.slow  # the worker pool scores
def test_a_chat_session_is_scored_as_one_conversation_once_idle(n8n, tmp_path, environment):
    defs = build_definitions([benchmark_file(tmp_path, CHAT_BENCHMARK)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n, None, "chat_online").cursor
        now = datetime.now(UTC)
        n8n.executions = [
            chat_execution(n, "s1", f"message {n}", now - timedelta(minutes=20 - n))
            for n in (1, 2, 3)
        ]
        result = tick(defs, instance, n8n, cursor, "chat_online")
        (request,) = result.run_requests
        (item,) = request.run_config["ops"]["chat_online__online_scores"]["config"]["items"]
        assert (item["kind"], item["key"], item["execution_ids"]) == ("session", "s1", [1, 2, 3])
        defs.resolve_job_def("chat_online__online").execute_in_process(
            partition_key=request.partition_key, run_config=request.run_config, instance=instance
        )
        # the user comes back to the same chat later: the whole chat is scored again, its
        # rows replacing the first three messages' (it was scored as a fragment of one
        # message, knowledge retention 0.0 on it, and counted twice)
        n8n.executions.append(chat_execution(4, "s1", "again", now - timedelta(minutes=6)))
        (later,) = tick(defs, instance, n8n, result.cursor, "chat_online").run_requests
        (item,) = later.run_config["ops"]["chat_online__online_scores"]["config"]["items"]
        assert item["execution_ids"] == [1, 2, 3, 4]
        assert later.run_key != request.run_key  # the daemon would skip a run key it ran
        assert later.partition_key == request.partition_key
        ran = defs.resolve_job_def("chat_online__online").execute_in_process(
            partition_key=later.partition_key, run_config=later.run_config, instance=instance
        )
        rows = query(
            environment,
            "select score_id, metric, execution_ids from chat_online.online_scores order by 1",
        )
        assert rows == [("session:s1:1", "turn_relevancy", json.dumps(["1", "2", "3", "4"]))]
        (summary,) = ran.asset_materializations_for_node("chat_online__online_summary")
        assert (summary.metadata["items"].value, summary.metadata["sessions"].value) == (1, 1)


WEBHOOK_MEMORY_AGENT = {
    **WEBHOOK_AGENT,
    "nodes": [
        *WEBHOOK_AGENT["nodes"],
        {"name": "Simple Memory", "type": "@n8n/n8n-nodes-langchain.memoryBufferWindow",
         "typeVersion": 1.3,
         "parameters": {"sessionIdType": "customKey", "sessionKey": "={{ $json.body.sessionId }}"}},
    ],
    "connections": {
        **WEBHOOK_AGENT["connections"],
        "Simple Memory": {"ai_memory": [[{"node": "AI Agent", "type": "ai_memory", "index": 0}]]},
    },
}  # fmt: skip
WEBHOOK_CONVERSATION_BENCHMARK = """
name: webhook_online
workflow: {id: wf}
dataset: {path: dataset.jsonl, idColumn: rowId}
target: {type: n8n_workflow, startNodeName: AI Agent, endNodeName: Reply}
metrics:
  - metric: turn_relevancy
  - metric: knowledge_retention
online:
  metrics: [turn_relevancy, knowledge_retention]
  sessionIdleMinutes: 5
"""


@pytest.mark.slow  # the worker pool scores
def test_a_webhook_agents_chats_are_scored_by_the_session_its_memory_keys(
    n8n, tmp_path, environment
):
    n8n.workflows["wf"] = WEBHOOK_MEMORY_AGENT
    defs = build_definitions([benchmark_file(tmp_path, WEBHOOK_CONVERSATION_BENCHMARK)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n, None, "webhook_online").cursor
        now = datetime.now(UTC)
        n8n.executions = [
            webhook_execution(n, f"answer {n}", now - timedelta(minutes=20 - n),
                              WEBHOOK_MEMORY_AGENT)
            for n in (1, 2, 3)
        ]  # fmt: skip
        for number, session in ((1, "u-1"), (2, "u-2"), (3, "u-1")):
            trigger = n8n.executions[number - 1]["data"]["resultData"]["runData"]["Webhook"]
            trigger[0]["data"]["main"][0][0]["json"]["body"]["sessionId"] = session
        (request,) = tick(defs, instance, n8n, cursor, "webhook_online").run_requests
        items = request.run_config["ops"]["webhook_online__online_scores"]["config"]["items"]
        assert [(i["kind"], i["key"], i["execution_ids"]) for i in items] == [
            ("session", "u-1", [1, 3]),
            ("session", "u-2", [2]),
        ]
        defs.resolve_job_def("webhook_online__online").execute_in_process(
            partition_key=request.partition_key, run_config=request.run_config, instance=instance
        )
        rows = query(
            environment,
            "select score_id, metric, error_kind from webhook_online.online_scores order by 1, 2",
        )
        assert rows == [
            ("session:u-1:1", "knowledge_retention", None),
            ("session:u-1:1", "turn_relevancy", None),
            ("session:u-2:2", "knowledge_retention", None),
            ("session:u-2:2", "turn_relevancy", None),
        ]


@pytest.mark.slow  # the worker pool scores
def test_scores_go_to_n8n_only_through_the_configured_sink_and_a_re_run_adds_none(
    n8n, tmp_path, environment
):
    with_sink = BENCHMARK + "sink:\n  onlineScores: {dataTable: online_scores}\n"
    defs = build_definitions([benchmark_file(tmp_path, with_sink)])
    with dg.instance_for_test() as instance:
        cursor = tick(defs, instance, n8n).cursor
        n8n.executions = [webhook_execution(n, "fine", DAY + timedelta(minutes=n)) for n in (1, 2)]
        (request,) = tick(defs, instance, n8n, cursor).run_requests
        for _ in range(2):
            _run_tick(defs, instance, request)
    (table,) = n8n.tables.values()
    assert table["meta"]["name"] == "online_scores"
    assert sorted((row["scoreId"], row["metric"], row["success"]) for row in table["rows"]) == [
        ("execution:1", "no_refund", True),
        ("execution:2", "no_refund", True),
    ]
    assert table["rows"][0]["startedAt"].startswith("2026-11-30T08:01")


@pytest.mark.parametrize("profile", ["distributed", "kubernetes"])
def test_online_evaluation_loads_under_the_postgresql_profiles_with_upserted_scores(
    n8n, tmp_path, monkeypatch, profile
):
    if profile == "distributed":
        pytest.importorskip("dagster_celery", reason="the distributed extra is not installed")
    else:
        pytest.importorskip("dagster_k8s", reason="the kubernetes extra is not installed")
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", profile)
    monkeypatch.setenv("N8N_DEEPEVAL_POSTGRES_URL", "postgresql+psycopg2://n8n@db/results")
    monkeypatch.setenv("N8N_DEEPEVAL_REDIS_URL", "redis://127.0.0.1:9/0")  # never contacted
    defs = build_definitions([benchmark_file(tmp_path)])
    assert isinstance(defs.resources["io_manager"], PostgresResultsIOManager)
    assert defs.resolve_sensor_def("support_online__online").job_name == "support_online__online"
    scores = defs.resolve_assets_def(dg.AssetKey(["support_online", "online_scores"]))
    assert scores.metadata_by_key[scores.key][UPSERT_KEY] == "score_id"
