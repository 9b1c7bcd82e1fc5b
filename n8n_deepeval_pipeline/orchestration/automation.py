"""Jobs, the nightly schedule and the workflow-change sensor of a benchmark.

Neither reads anything but the workflow file: loading definitions or ticking a
sensor never calls n8n or a judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from n8n_deepeval_pipeline.benchmark_config import Benchmark
from n8n_deepeval_pipeline.config_errors import BenchmarkConfigError
from n8n_deepeval_pipeline.workflow.file import read_workflow
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


def job_name(benchmark: Benchmark) -> str:
    """The job that materialises every asset of a benchmark for one workflow hash."""
    return f"{benchmark.name}__benchmark"


def current_hash(benchmark: Benchmark) -> str:
    """The hash of the workflow file as it is now."""
    return workflow_hash(read_workflow(benchmark.workflow))


def build_job(
    benchmark: Benchmark, partitions: dg.DynamicPartitionsDefinition
) -> UnresolvedAssetJobDefinition:
    """All assets of the benchmark, one workflow version per run."""
    return dg.define_asset_job(
        name=job_name(benchmark),
        selection=dg.AssetSelection.groups(benchmark.name),
        partitions_def=partitions,
        description=f"Benchmark {benchmark.name} for one workflow version.",
    )


def build_schedule(
    benchmark: Benchmark, job: UnresolvedAssetJobDefinition, partitions_name: str
) -> dg.ScheduleDefinition:
    """Re-run the current workflow version on the benchmark's cron (nightly by default)."""

    @dg.schedule(
        name=f"{benchmark.name}__nightly",
        cron_schedule=benchmark.schedule,
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
    def nightly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        try:
            key = current_hash(benchmark)
        except BenchmarkConfigError as error:
            return dg.SkipReason(str(error))
        if not context.instance.has_dynamic_partition(partitions_name, key):
            context.instance.add_dynamic_partitions(partitions_name, [key])
        return dg.RunRequest(partition_key=key, tags={"n8n_deepeval/trigger": "schedule"})

    return nightly


def build_sensor(
    benchmark: Benchmark, job: UnresolvedAssetJobDefinition, partitions_name: str
) -> dg.SensorDefinition:
    """Add a partition and run it when the workflow file hashes to a new version."""

    @dg.sensor(
        name=f"{benchmark.name}__workflow_changed",
        job=job,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def workflow_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        try:
            key = current_hash(benchmark)
        except BenchmarkConfigError as error:
            return dg.SkipReason(str(error))
        if context.instance.has_dynamic_partition(partitions_name, key):
            return dg.SkipReason(f"workflow version {key[:12]} is already a partition")
        return dg.SensorResult(
            dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(partitions_name, [key])],
            run_requests=[
                dg.RunRequest(
                    partition_key=key, run_key=key, tags={"n8n_deepeval/trigger": "workflow_change"}
                )
            ],
            cursor=key,
        )

    return workflow_changed
