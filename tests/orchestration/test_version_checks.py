"""Check results belong to a workflow version: each partition keeps its own latest status."""

import dagster as dg
import pytest
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from tests.orchestration.conftest import example_key, run_job

pytestmark = pytest.mark.slow

NO_REGRESSION = dg.AssetCheckKey(
    dg.AssetKey(["support_agent", "version_comparison"]), "no_regression"
)


def test_a_rescore_backfill_keeps_each_versions_check_result_with_its_partition(
    example_copy, environment
):
    first = example_key(example_copy)
    workflow = example_copy.parent / "workflow.json"
    with dg.instance_for_test() as instance:
        assert run_job(build_definitions([example_copy]), instance, first).success
        workflow.write_text((example_copy.parent / "workflow.v2.json").read_text())
        second = example_key(example_copy)
        defs = build_definitions([example_copy])
        # the regressed version's runs are failures, on its verdict (version_passes)
        assert not run_job(defs, instance, second).success
        # a re-score backfill, the regressed version first: the other one is scored last
        for key in (second, first):
            rescored = run_job(defs, instance, key, job="support_agent__rescore")
            assert rescored.success == (key == first)
        infos = instance.event_log_storage.get_asset_check_partition_info([NO_REGRESSION])
        history = instance.event_log_storage.get_asset_check_execution_history(
            NO_REGRESSION, limit=10
        )
    latest = {info.partition_key: info for info in infos}
    assert set(latest) == {first, second}
    assert latest[second].latest_execution_status == AssetCheckExecutionRecordStatus.FAILED
    assert latest[first].latest_execution_status == AssetCheckExecutionRecordStatus.SUCCEEDED
    # each evaluated against its own version's materialisation, not "Not evaluated"
    assert all(info.is_current for info in infos)
    assert [record.partition for record in history] == [first, second, second, first]
