"""Online evaluation on a fleet: a real n8n's production traffic scored through PostgreSQL,
Redis and Celery workers (tests/live/cluster.py), each execution tagged with its version.

The workflow (a webhook that echoes the question, v1) serves traffic; the online sensor
ticks in this process (the orchestrator) and its runs execute on the workers: two ticks,
a restart of the orchestrator (the definitions built again, the cursor read back), then a
second worker and an edit published in n8n (v2 answers "Refund issued"), whose traffic is
scored on the second worker, then scored again on the first (the same run delivered
twice, as after an orchestrator lost track of a run it launched). Every execution has its
row exactly once;
v1's rows carry the version key the benchmark registered, v2's the key the online sensor
registered from the traffic, and the per-version summary flags v2 as a regression against
v1. Runs only with N8N_DEEPEVAL_LIVE=1 and N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets both).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.online.cursor import OnlineCursor
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions, n8n_resource
from n8n_deepeval_pipeline.workflow.hashing import version_key, workflow_hash
from tests.live.cluster import Cluster, cluster_of, require_distributed, step_hosts
from tests.live.n8n_server import N8nServer
from tests.live.test_live_traffic import ECHO_WORKFLOW, wait_for_executions

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]

NAME, PATH = "live_fleet", "fleet-online"
JOB = f"{NAME}__online"
VERSIONS = f"{NAME}__workflow_hash"
BENCHMARK = f"""
name: {NAME}
workflow: {{{{id: {{workflow_id}}}}}}
dataset: {{{{path: dataset.jsonl, idColumn: rowId}}}}
target: {{{{type: n8n_workflow, startNodeName: Answer, endNodeName: Answer}}}}
metrics:
  - metric: pattern_match
    label: no_refund
    pattern: "^(?!.*[Rr]efund issued).*$"
online:
  metrics: [no_refund]
"""


@dataclass
class Traffic:
    n8n: N8nServer
    cluster: Cluster
    workflow_id: str
    file: Path
    executions: int = 1  # the call that waited for the webhook

    def call(self, *questions: str) -> None:
        for question in questions:
            assert self.n8n.call_webhook(PATH, {"question": question}).status_code == 200
            self.executions += 1
        wait_for_executions(self.n8n, self.workflow_id, self.executions)

    def tick(self, defs: dg.Definitions, cursor: str | None) -> Any:
        """One tick of the online sensor, as the daemon runs it (its cursor stored by Dagster)."""
        sensor = defs.resolve_sensor_def(f"{NAME}__online")
        context = dg.build_sensor_context(
            instance=self.cluster.instance, cursor=cursor, resources={"n8n": n8n_resource()}
        )
        result = sensor(context)
        for request in getattr(result, "dynamic_partitions_requests", None) or []:
            self.cluster.instance.add_dynamic_partitions(  # as the daemon does
                request.partitions_def_name, request.partition_keys
            )
        return result

    def run(self, request: dg.RunRequest) -> dg.ExecuteJobResult:
        result = self.cluster.execute(
            JOB, request.partition_key or "", run_config=request.run_config
        )
        assert result.success, [str(event) for event in result.all_events if event.is_failure]
        return result


@pytest.fixture(scope="module")
def traffic(n8n: N8nServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traffic]:
    require_distributed()
    folder = tmp_path_factory.mktemp("fleet_online")
    workflow = copy.deepcopy(ECHO_WORKFLOW)
    workflow["name"] = "fleet online echo"
    workflow["nodes"][0]["parameters"]["path"] = PATH
    workflow["nodes"][0]["webhookId"] = "5e0c1f7a-3b2d-4c1e-9f00-00000000e031"
    workflow_id = n8n.create_workflow(workflow)
    benchmarks = folder / "benchmarks"
    (benchmarks / NAME).mkdir(parents=True)
    (benchmarks / NAME / "dataset.jsonl").write_text('{"rowId": "r1", "input": "hello"}\n')
    file = benchmarks / NAME / "benchmark.yaml"
    file.write_text(BENCHMARK.format(workflow_id=workflow_id))
    environment = {"N8N_API_URL": n8n.base_url, "N8N_API_KEY": n8n.api_key,
                   "DEEPEVAL_POOL_SIZE": "1"}  # fmt: skip
    try:
        assert n8n.wait_for_webhook(PATH, body={"question": "before"}).status_code == 200
        wait_for_executions(n8n, workflow_id, 1)
        with cluster_of(folder, benchmarks, environment, ("machine-a",)) as cluster:
            yield Traffic(n8n, cluster, workflow_id, file)
    finally:
        n8n.delete_workflow(workflow_id)


def publish_refunds(traffic: Traffic) -> None:
    """Edit the workflow in n8n, as a user saves and publishes a new version."""
    workflow = copy.deepcopy(ECHO_WORKFLOW)
    workflow["nodes"][0]["parameters"]["path"] = PATH
    workflow["nodes"][0]["webhookId"] = "5e0c1f7a-3b2d-4c1e-9f00-00000000e031"
    assignment = workflow["nodes"][1]["parameters"]["assignments"]["assignments"][0]
    assignment["value"] = "={{ 'Refund issued: ' + $json.body.question }}"
    body = {
        "name": "fleet online echo",
        "nodes": workflow["nodes"],
        "connections": workflow["connections"],
        "settings": {"executionOrder": "v1"},
    }
    n8n = traffic.n8n
    assert n8n.api("PUT", f"/workflows/{traffic.workflow_id}", json=body).status_code == 200
    assert n8n.api("POST", f"/workflows/{traffic.workflow_id}/publish").status_code == 200
    deadline = time.monotonic() + 30
    while True:  # until the new version serves; every answered probe is traffic too
        answer = n8n.call_webhook(PATH, {"question": "probe"})
        traffic.executions += answer.status_code != 404
        if answer.status_code == 200 and answer.json()["output"].startswith("Refund issued"):
            break
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.2)
    wait_for_executions(n8n, traffic.workflow_id, traffic.executions)


def current_version(traffic: Traffic) -> tuple[str, str]:
    """n8n's version id and the pipeline's hash of the workflow as it is now."""
    with N8nClient(traffic.n8n.base_url, traffic.n8n.api_key) as client:
        workflow = client.workflow(traffic.workflow_id)
    return str(workflow["activeVersionId"]), workflow_hash(workflow)


def test_production_traffic_is_scored_once_on_a_fleet_and_a_new_version_s_drop_flagged(
    traffic: Traffic,
) -> None:
    cluster, instance = traffic.cluster, traffic.cluster.instance
    v1_id, v1 = current_version(traffic)
    instance.add_dynamic_partitions(VERSIONS, [version_key(v1)])  # the benchmark ran v1
    defs = build_definitions([traffic.file])
    first = traffic.tick(defs, None)
    assert first.run_requests == []  # traffic from before the sensor is not scored
    traffic.call("Where is my order?", "Can I change the address?", "Is it in stock?")
    second = traffic.tick(defs, first.cursor)
    (request,) = second.run_requests
    ran = traffic.run(request)
    assert {host.split("@")[0] for host, _ in step_hosts(instance, ran.run_id).values()} == {
        "machine-a"}  # fmt: skip
    # The orchestrator restarts: the definitions built again, the cursor read back.
    restarted = build_definitions([traffic.file])
    again = traffic.tick(restarted, second.cursor)
    assert again.run_requests == []  # nothing twice

    # A second machine joins; a new version is published and serves the next traffic.
    cluster.start_worker("machine-b")
    cluster.wait_for_workers("machine-a", "machine-b")
    publish_refunds(traffic)
    v2_id, v2 = current_version(traffic)
    assert v2_id != v1_id and v2 != v1
    traffic.call("Refund please", "My parcel is late", "Wrong size")
    third = traffic.tick(restarted, again.cursor)
    (today,) = third.run_requests
    assert instance.has_dynamic_partition(VERSIONS, version_key(v2))  # registered from traffic
    # The new machine scores the day's new traffic; then the same run is delivered again
    # and the first machine scores it too: its rows replace the same rows, no others.
    # (Runs in one process one at a time: Dagster's log set-up is not safe across threads;
    # the daemon gives every run a process of its own.)
    cluster.serve_only("machine-b")
    on_b = traffic.run(today)
    cluster.serve_only("machine-a")
    final = traffic.run(today)  # the day summed up again from the same rows
    for result, machine in ((on_b, "machine-b"), (final, "machine-a")):
        hosts = step_hosts(instance, result.run_id)
        assert {host.split("@")[0] for host, _ in hosts.values()} == {machine}, hosts
        assert any(step.endswith("online_scores") for step in hosts), hosts

    # Every execution since the sensor started has its row exactly once, tagged by version.
    started_after = OnlineCursor.read(first.cursor).last_id
    executions = traffic.n8n.api(
        "GET",
        "/executions",
        {"workflowId": traffic.workflow_id, "limit": 250, "includeData": "true"},
    ).json()["data"]  # with its data, n8n says which version ran it
    served = {int(e["id"]): e["workflowVersionId"] for e in executions
              if int(e["id"]) > started_after}  # fmt: skip
    assert sorted(set(served.values())) == sorted({v1_id, v2_id})
    rows = cluster.query(
        f"select score_id, count(*), min(workflow_hash), min(n8n_version_id), "
        f"min(version_match), bool_and(success) from {NAME}.online_scores group by 1"
    )
    by_execution = {int(row[0].split(":")[1]): row[1:] for row in rows}
    expected = {v1_id: (v1, True), v2_id: (v2, False)}  # v2 promises refunds: it fails
    assert by_execution == {
        number: (1, expected[ran][0], ran, "version_id", expected[ran][1])
        for number, ran in served.items()
    }
    # n8n's history names v1 by the same hash the benchmark registered (no defaults in it)
    with N8nClient(traffic.n8n.base_url, traffic.n8n.api_key) as client:
        saved = client.workflow_version(traffic.workflow_id, v1_id)
    assert saved is not None and workflow_hash(saved) == v1
    # The day per version, and v2's production pass rate against v1's, as compare does.
    summary = cluster.query(
        f"select to_char(day at time zone 'UTC', 'YYYY-MM-DD'), left(workflow_hash, 12), "
        f"items, passed, round(pass_rate::numeric, 3), round(pass_rate_low::numeric, 3), "
        f"round(pass_rate_high::numeric, 3) from {NAME}.online_summary order by 2"
    )
    print(f"online summary per day and version: {summary}")  # the closing note quotes it
    counts = {ran: sum(version == ran for version in served.values()) for ran in expected}
    assert sorted((row[1], row[2], row[3]) for row in summary) == sorted(
        [(version_key(v1), counts[v1_id], counts[v1_id]), (version_key(v2), counts[v2_id], 0)]
    )
    checks = {check.check_name: check for check in final.get_asset_check_evaluations()}
    version = checks["no_version_regression"]
    print({name: value.value for name, value in version.metadata.items()})
    assert not version.passed
    assert version.metadata["verdict"].value == "regression"
    compared = (version.metadata["baseline/version"], version.metadata["candidate/version"])
    assert tuple(entry.value for entry in compared) == (version_key(v1), version_key(v2))
