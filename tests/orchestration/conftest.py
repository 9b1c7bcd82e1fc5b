"""Fixtures of the Dagster tests: a private home and DuckDB file, and reading it back."""

import json
from pathlib import Path

import duckdb
import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.automation import current_hash
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.workflow.hashing import version_key

PARTITIONS = "support_agent__workflow_hash"


@pytest.fixture
def environment(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "db" / "results.duckdb"))
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "2")
    return tmp_path / "db" / "results.duckdb"


def query(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as connection:
        return connection.execute(sql).fetchall()


def edit_and_record_new_version(example_copy):
    """Edit the workflow and record outputs for the new version, as `run --record` would."""
    benchmark = load_benchmark(example_copy)
    workflow = json.loads(benchmark.workflow.read_text())
    workflow["nodes"][1]["parameters"]["options"]["maxIterations"] = 3
    benchmark.workflow.write_text(json.dumps(workflow))
    new = current_hash(benchmark, N8nResource())
    recorded = example_copy.parent / "outputs.jsonl"
    # the first version's lines (the example's second version has its own, with their hash)
    lines = [json.loads(line) for line in recorded.read_text().splitlines()]
    lines = [line for line in lines if "workflow_hash" not in line]
    with recorded.open("a") as file:
        file.writelines(json.dumps({**line, "workflow_hash": new}) + "\n" for line in lines)
    return version_key(new)


def example_key(benchmark_file) -> str:
    """The version key of the benchmark's workflow as it is now (its file)."""
    return version_key(current_hash(load_benchmark(benchmark_file), N8nResource()))


def step_failure(result):
    """The one step failure of a run."""
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    return failure


def run_job(defs, instance, key, job="support_agent__benchmark"):
    """Register the version (if it is new) and run a job of the example for it."""
    if not instance.has_dynamic_partition(PARTITIONS, key):
        instance.add_dynamic_partitions(PARTITIONS, [key])
    return defs.resolve_job_def(job).execute_in_process(
        partition_key=key, instance=instance, raise_on_error=False
    )
