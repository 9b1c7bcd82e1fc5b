"""A stored partition read back by its IO manager, as Dagster's own loader reads it."""

import dagster as dg
import pandas as pd
import pytest

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.stored_tables import load_stored
from tests.orchestration.conftest import example_key, run_job

pytestmark = pytest.mark.slow

TABLES = ("metric_scores", "run_aggregates", "consistency_stats", "workflow_checks")


def _counting_throwaway_instances(monkeypatch) -> list[int]:
    made: list[int] = []
    real = dg.DagsterInstance.ephemeral

    def ephemeral(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dg.DagsterInstance, "ephemeral", staticmethod(ephemeral))
    return made


def test_each_table_is_dagsters_own_read_without_a_throwaway_instance(
    example_copy, environment, monkeypatch
):
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        made = _counting_throwaway_instances(monkeypatch)
        for table in TABLES:
            asset = dg.AssetKey(["support_agent", table])
            ours = load_stored(defs, instance, asset, key)
            assert made == []
            dagsters = defs.load_asset_value(asset, instance=instance, partition_key=key)
            assert len(made) == 2  # Dagster's: one for each of its two contexts
            made.clear()
            assert len(ours) > 0
            pd.testing.assert_frame_equal(ours, dagsters)
        other = load_stored(defs, instance, dg.AssetKey(["support_agent", TABLES[0]]), "0" * 12)
        assert other.empty  # a version never run has no rows
