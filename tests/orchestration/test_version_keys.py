import dagster as dg

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.orchestration.assets import scored_versions
from n8n_deepeval_pipeline.orchestration.version_keys import register_version, shorten_old_keys
from tests.orchestration.conftest import PARTITIONS

OLD = ["a" * 64, "b" * 64, "c" * 64]  # registered by a version that used full hashes


def test_full_hash_keys_of_an_old_instance_become_version_keys_in_order(example_copy):
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTITIONS, OLD)
        # the first two were scored under their full hashes
        for key in OLD[:2]:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(["support_agent", "run_aggregates"], partition=key)
            )
        assert shorten_old_keys(instance, PARTITIONS) == OLD
        assert instance.get_dynamic_partitions(PARTITIONS) == ["a" * 12, "b" * 12, "c" * 12]
        assert shorten_old_keys(instance, PARTITIONS) == []  # once only
        # the baseline rule still sees them as scored, in registration order
        benchmark = load_benchmark(example_copy)
        assert scored_versions(instance, benchmark) == ["a" * 12, "b" * 12]
        assert register_version(instance, PARTITIONS, "d" * 64) == "d" * 12
        assert register_version(instance, PARTITIONS, "d" * 64) == "d" * 12
        assert instance.get_dynamic_partitions(PARTITIONS)[-1] == "d" * 12
        assert len(instance.get_dynamic_partitions(PARTITIONS)) == 4
