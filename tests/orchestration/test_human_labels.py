"""People's labels in the results' DuckDB file, beside a run's tables and never replaced by it."""

import dagster as dg
import duckdb
import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.human_labels import (
    DUCKDB_CONFIG,
    DuckDbLabelStore,
    HumanLabelsResource,
)
from n8n_deepeval_pipeline.workspace.calibration_gate import labels_beside_scores
from n8n_deepeval_pipeline.workspace.store import StoreSource, reading
from tests.conftest import EXAMPLE
from tests.orchestration.conftest import example_key, run_job
from tests.orchestration.label_store_scenarios import label, labels_kept_and_joined


def test_labels_are_kept_and_read_beside_the_scores(tmp_path):
    database = tmp_path / "results.duckdb"
    store = DuckDbLabelStore(load_benchmark(EXAMPLE / "benchmark.yaml"), database)

    def write_table(name, frame):
        with duckdb.connect(str(database), config=DUCKDB_CONFIG) as connection:
            connection.register("frame", frame)
            connection.execute(
                f"create or replace table support_agent.{name} as select * from frame"
            )

    labels_kept_and_joined(store, write_table)
    assert oct(database.stat().st_mode & 0o777) == "0o600"  # private, as the results are
    # The results workspace reads the same labels through its own read-only connection.
    with reading(StoreSource("duckdb", str(database))) as reader:
        read = labels_beside_scores(reader, store.benchmark)
    assert [label.kind for label in read] == ["benchmark", "benchmark", "online", "red_team"]
    assert read == store.judged()


@pytest.mark.slow
def test_a_run_of_the_benchmark_leaves_the_labels_alone(environment, example_copy):
    example_copy.write_text(example_copy.read_text() + "calibration: {gate: true}\n")
    defs = build_definitions([example_copy])
    resource = defs.resources["human_labels"]
    assert isinstance(resource, HumanLabelsResource) and resource.database == str(environment)
    store = resource.store(load_benchmark(example_copy))
    key = example_key(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        assert store.judged() == []  # nothing labelled yet
        with duckdb.connect(str(environment), read_only=True) as connection:
            scored, value = connection.execute(
                "select run_id, score from support_agent.metric_scores "
                "where metric = 'exact_answer' order by run_id limit 1"
            ).fetchone()
        store.upsert([label(scored, "exact_answer", "ann", True)])
        assert run_job(defs, instance, key).success  # every asset again, labels untouched
        assert run_job(defs, instance, key, "support_agent__rescore").success
        aggregates = instance.get_latest_materialization_event(
            dg.AssetKey(["support_agent", "run_aggregates"])
        ).asset_materialization.metadata
        report = instance.get_latest_materialization_event(
            dg.AssetKey(["support_agent", "benchmark_report"])
        ).asset_materialization.metadata
    # the dry-run judge's placeholders agree with nobody: both judged metrics uncalibrated
    assert aggregates["uncalibrated_metrics"].value == "helpfulness, bias"
    assert aggregates["calibration/bias"].value.startswith("too_few_labels: 0 of 30 labels")
    # where people label the runs, linked from both assets while metrics are uncalibrated
    assert aggregates["review_url"].value.endswith("/benchmarks/support_agent/review")
    assert report["review_url"].value == aggregates["review_url"].value
    (kept,) = store.judged()
    assert (kept.run_id, kept.metric, kept.passed) == (scored, "exact_answer", True)
    assert kept.score == value
