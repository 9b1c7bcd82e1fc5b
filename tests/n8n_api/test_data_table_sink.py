"""The Data Table sink: columns typed by the row model, a cut-off write completed by re-running."""

import dagster as dg
import pytest
import yaml

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import DataTableOutput
from n8n_deepeval_pipeline.n8n_api.client import DataTable, N8nApiError
from n8n_deepeval_pipeline.n8n_api.data_table_sink import (
    AGGREGATE_KEYS,
    declared_columns,
    write_rows,
)
from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner
from n8n_deepeval_pipeline.tables.rows import ConsistencyStats, RunAggregate

HASH = "c" * 64


def aggregate(run: int, cost_usd: float | None) -> RunAggregate:
    return RunAggregate(
        workflow_hash=HASH, run_id=f"{HASH}:r:{run}", case_id=f"{HASH}:r", overall_score=1.0,
        raw_mean_score=1.0, overall_success=True, pass_rule="allPass", metrics_passed=1,
        metrics_counted=1, metric_errors=0, judge_calls=1, tokens=0, cost_usd=cost_usd,
        metrics=[{"metric": "a", "success": True}],
    )  # fmt: skip


class FakeDataTables:
    """An n8n Data Tables API in memory (a test double) that can fail after some writes."""

    def __init__(self, fail_after: int | None = None):
        self.columns: dict[str, str] = {}
        self.stored: list[dict] = []
        self.fail_after = fail_after
        self.writes = 0

    def find_data_table(self, name):
        return DataTable(id="t1", name=name) if self.columns else None

    def create_data_table(self, name, columns):
        self.columns = {column.name: column.type for column in columns}
        return DataTable(id="t1", name=name)

    def rows(self, table_id, filter_=None):
        wanted = {f["columnName"]: f["value"] for f in (filter_ or {}).get("filters", [])}
        return [row for row in self.stored if all(row[k] == v for k, v in wanted.items())]

    def upsert_row(self, table_id, keys, row):
        for name, value in row.items():  # n8n refuses a value of another type than its column
            if value is not None and self.columns.get(name) == "number":
                assert isinstance(value, (int, float)), f"{name}: {value!r} in a number column"
        if self.fail_after is not None and self.writes >= self.fail_after:
            raise N8nApiError("n8n is unreachable", None)
        self.writes += 1
        self.stored = [r for r in self.stored if any(r[k] != v for k, v in keys.items())]
        self.stored.append(dict(row))


OUTPUT = DataTableOutput(dataTable="runs")


def test_columns_are_typed_by_the_row_model_even_when_the_first_cost_is_null():
    tables = FakeDataTables()
    write_rows(
        tables, OUTPUT, [aggregate(0, None), aggregate(1, 0.25)], AGGREGATE_KEYS, RunAggregate
    )
    assert tables.columns["costUsd"] == "number"  # not text from a first null
    assert tables.columns["overallSuccess"] == "boolean"
    assert tables.columns["metricsPassed"] == "number"
    assert tables.columns["metrics"] == "string"  # JSON text
    assert tables.columns["runId"] == "string"


def test_maps_and_lists_of_numbers_are_text_columns_as_their_json_is():
    columns = declared_columns(ConsistencyStats)
    assert columns["passAtK"] == "string"  # dict[int, float]: JSON text, not a number
    assert all(kind in {"string", "number", "boolean", "date"} for kind in columns.values())
    optional_numbers = [name for name, kind in columns.items() if kind == "number"]
    assert "passAtK" not in optional_numbers and optional_numbers


def test_a_write_cut_off_by_an_outage_is_completed_by_running_it_again():
    rows = [aggregate(run, 0.01) for run in range(5)]
    tables = FakeDataTables(fail_after=2)
    with pytest.raises(N8nApiError, match=r"runs: 2 of 5 rows written before n8n is unreachable"):
        write_rows(tables, OUTPUT, rows, AGGREGATE_KEYS, RunAggregate)
    tables.fail_after = None
    resumed = write_rows(tables, OUTPUT, rows, AGGREGATE_KEYS, RunAggregate)
    assert (resumed.written, resumed.already_there) == (3, 2)
    assert len(tables.stored) == 5 and tables.writes == 5
    again = write_rows(tables, OUTPUT, rows, AGGREGATE_KEYS, RunAggregate)
    assert (again.written, again.already_there) == (0, 5)
    # a re-scored run is written again: its stored row is not as it is now
    changed = write_rows(
        tables, OUTPUT, [*rows[:4], aggregate(4, 0.5)], AGGREGATE_KEYS, RunAggregate
    )
    assert (changed.written, changed.already_there) == (1, 4)


def test_backfill_from_accepts_the_sink_by_the_name_its_logs_use(
    example_copy, tmp_path, monkeypatch
):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    document = yaml.safe_load(example_copy.read_text())
    document["sink"] = {"runAggregates": {"dataTable": "runs"}}
    example_copy.write_text(yaml.safe_dump(document))
    with dg.instance_for_test() as instance:
        runner = BenchmarkRunner(load_benchmark(example_copy), example_copy, instance)
        assert runner.asset_names()[-2:] == ["benchmark_report", "data_table_sink"]
        with pytest.raises(ValueError, match="unknown asset 'sink'; assets: workflow_snapshot"):
            runner.materialise("f7ee35b359b4", "sink")
