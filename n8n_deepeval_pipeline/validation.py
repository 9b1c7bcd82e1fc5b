"""Check a benchmark file and everything it points to, without running anything."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from n8n_deepeval_pipeline.benchmark_config import Benchmark, load_benchmark
from n8n_deepeval_pipeline.config_errors import BenchmarkConfigError
from n8n_deepeval_pipeline.tables.dataset_file import load_dataset_rows
from n8n_deepeval_pipeline.tables.recorded_outputs import read_recorded_lines
from n8n_deepeval_pipeline.workflow.file import read_workflow
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash


class CheckReport(BaseModel):
    """What a valid benchmark will run."""

    benchmark: str
    workflow_hash: str
    rows: int
    runs: int
    metrics: list[str]


def check_benchmark(path: Path) -> tuple[Benchmark, CheckReport]:
    """Validate the file, the workflow, the dataset and the recorded outputs."""
    benchmark = load_benchmark(path)
    digest = workflow_hash(read_workflow(benchmark.workflow))
    rows = load_dataset_rows(benchmark.dataset, digest)
    target = benchmark.target
    if target.outputs is not None:
        read_recorded_lines(target.outputs)
    elif target.columns and rows:
        missing = sorted(set(target.columns.values()) - set(rows[0].raw))
        if missing:
            raise BenchmarkConfigError(
                path, [f"target.columns: columns {missing} are not in the dataset"]
            )
    report = CheckReport(
        benchmark=benchmark.name,
        workflow_hash=digest,
        rows=len(rows),
        runs=len(rows) * benchmark.runs_per_row,
        metrics=benchmark.metric_labels,
    )
    return benchmark, report
