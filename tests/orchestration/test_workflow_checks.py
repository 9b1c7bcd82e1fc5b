"""The workflow_checks asset: the example's stored snapshot graded, stored, never gating."""

import json

import dagster as dg
import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.automation import current_hash
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.workflow.checks import CHECKS
from n8n_deepeval_pipeline.workflow.hashing import version_key
from tests.orchestration.conftest import PARTITIONS, query

pytestmark = pytest.mark.slow

SNAPSHOT = dg.AssetKey(["support_agent", "workflow_snapshot"])
CHECKS_KEY = dg.AssetKey(["support_agent", "workflow_checks"])


def run(defs, instance, key, *assets):
    if not instance.has_dynamic_partition(PARTITIONS, key):
        instance.add_dynamic_partitions(PARTITIONS, [key])
    return defs.resolve_job_def("support_agent__benchmark").execute_in_process(
        partition_key=key, instance=instance, asset_selection=list(assets), raise_on_error=False
    )


def test_the_example_is_graded_from_its_snapshot_and_a_failed_check_only_warns(
    example_copy, environment
):
    defs = build_definitions([example_copy])
    benchmark = load_benchmark(example_copy)
    full = current_hash(benchmark, N8nResource())
    key = version_key(full)
    with dg.instance_for_test() as instance:
        result = run(defs, instance, key, SNAPSHOT, CHECKS_KEY)
        assert result.success  # the example's open webhook fails a check, not the run
        (evaluation,) = result.get_asset_check_evaluations()
        (materialisation,) = result.asset_materializations_for_node(
            "support_agent__workflow_checks"
        )

        # a re-score or backfill: the workflow has changed since, the stored snapshot is read
        workflow = json.loads(benchmark.workflow.read_text())
        workflow["nodes"][0]["parameters"]["authentication"] = "headerAuth"
        benchmark.workflow.write_text(json.dumps(workflow))
        again = run(defs, instance, key, CHECKS_KEY)
        assert again.success
        (evaluation_again,) = again.get_asset_check_evaluations()

    assert (evaluation.check_name, evaluation.passed) == ("workflow_checks_pass", False)
    assert evaluation.severity == dg.AssetCheckSeverity.WARN
    assert evaluation.metadata["failed_checks"].value == "inbound_triggers_authenticated"
    assert evaluation_again.passed is False  # still the stored version's verdict

    metadata = materialisation.metadata
    assert (metadata["passed"].value, metadata["failed"].value) == (7, 1)
    assert metadata["not_applicable"].value == 1
    table = metadata["checks"].value
    assert "| inbound_triggers_authenticated | security | ❌ fail |" in table
    assert len(table.splitlines()) == 2 + len(CHECKS)

    rows = query(
        environment,
        "select workflow_hash, check_id, category, status, message, nodes "
        "from support_agent.workflow_checks",
    )
    assert len(rows) == len(CHECKS)  # materialised twice: the partition's rows replaced
    assert {row[0] for row in rows} == {full}
    graded = {check_id: (status, json.loads(nodes)) for _, check_id, _, status, _, nodes in rows}
    assert graded["inbound_triggers_authenticated"] == ("fail", ["Webhook"])
    assert graded["tools_connected"] == ("pass", ["calculator", "order_lookup"])
    assert graded["memory_properly_connected"] == ("not_applicable", [])
    inbound = next(row for row in rows if row[1] == "inbound_triggers_authenticated")
    assert inbound[2:5] == ("security", "fail", "webhook without inbound authentication")
