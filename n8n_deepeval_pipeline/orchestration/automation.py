"""Jobs, the nightly schedule and the workflow-change sensor of a benchmark.

Loading the definitions calls nothing. A tick reads only the workflow: its file, or the
workflow in n8n through the n8n resource; it never calls a judge or a webhook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.n8n_api.client import N8nApiError
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nNotConfiguredError, N8nResource
from n8n_deepeval_pipeline.orchestration.run_owner import fail_abandoned_runs
from n8n_deepeval_pipeline.orchestration.version_keys import register_version, shorten_old_keys
from n8n_deepeval_pipeline.workflow.hashing import version_key, workflow_hash

# The cron a schedule gets when the benchmark sets none (it starts stopped).
DEFAULT_CRON = "0 2 * * *"

# What a tick reports as a skip rather than a failure: the workflow cannot be read now.
_UNREADABLE = (BenchmarkConfigError, N8nApiError, N8nNotConfiguredError)

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


def job_name(benchmark: Benchmark) -> str:
    """The job that materialises every asset of a benchmark for one workflow hash."""
    return f"{benchmark.name}__benchmark"


def rescore_job_name(benchmark: Benchmark) -> str:
    """The job that re-scores a version's stored outputs."""
    return f"{benchmark.name}__rescore"


def current_hash(benchmark: Benchmark, n8n: N8nResource) -> str:
    """The hash of the workflow as it is now (its file, or the workflow in n8n)."""
    workflow, _ = n8n.workflow(benchmark)
    return workflow_hash(workflow)


def _hash_or_skip(benchmark: Benchmark, n8n: N8nResource) -> str | dg.SkipReason:
    """The current full hash, or why a tick cannot read the workflow now."""
    try:
        return current_hash(benchmark, n8n)
    except _UNREADABLE as error:
        return dg.SkipReason(str(error))


def build_job(
    benchmark: Benchmark, partitions: dg.DynamicPartitionsDefinition
) -> UnresolvedAssetJobDefinition:
    """All assets of the benchmark, one workflow version per run."""
    return dg.define_asset_job(
        name=job_name(benchmark),
        selection=dg.AssetSelection.groups(benchmark.name),
        partitions_def=partitions,
        description=f"Benchmark the current workflow version of {benchmark.name}: read the "
        "workflow, produce outputs, score them. For older versions use the re-score job.",
    )


def build_rescore_job(
    benchmark: Benchmark, partitions: dg.DynamicPartitionsDefinition
) -> UnresolvedAssetJobDefinition:
    """Scores and what follows them, from the stored outputs of any version.

    A version's workflow and outputs cannot be produced again once the workflow has
    changed, so backfills over every version start here and keep what was stored.
    """
    scores = dg.AssetSelection.assets(dg.AssetKey([benchmark.name, "metric_scores"]))
    # The checks read only the stored snapshot, so old versions are graded (again) too.
    checks = dg.AssetSelection.assets(dg.AssetKey([benchmark.name, "workflow_checks"]))
    return dg.define_asset_job(
        name=rescore_job_name(benchmark),
        selection=scores.downstream() | checks,
        partitions_def=partitions,
        description=f"Re-score the stored outputs of any {benchmark.name} version (after a "
        "metric, threshold or judge change); reads no workflow and calls no n8n. "
        "Backfill this job to re-score every version.",
    )


def build_schedule(
    benchmark: Benchmark, job: UnresolvedAssetJobDefinition, partitions_name: str
) -> dg.ScheduleDefinition:
    """Re-run the current workflow version on the benchmark's cron.

    On by default only when the benchmark file sets ``schedule``: a bundled or new benchmark
    never spends judge calls on its own.
    """
    on = (
        dg.DefaultScheduleStatus.RUNNING if benchmark.schedule else dg.DefaultScheduleStatus.STOPPED
    )

    @dg.schedule(
        name=f"{benchmark.name}__nightly",
        cron_schedule=benchmark.schedule or DEFAULT_CRON,
        job=job,
        default_status=on,
    )
    def nightly(
        context: dg.ScheduleEvaluationContext, n8n: N8nResource
    ) -> dg.RunRequest | dg.SkipReason:
        current = _hash_or_skip(benchmark, n8n)
        if isinstance(current, dg.SkipReason):
            return current
        key = register_version(context.instance, partitions_name, current)
        return dg.RunRequest(partition_key=key, tags={"n8n_deepeval/trigger": "schedule"})

    return nightly


def _benchmark_runs(
    instance: dg.DagsterInstance, benchmark: Benchmark, key: str | None = None
) -> bool:
    """Whether the benchmark job ever ran (for version ``key``, when given)."""
    tags = {} if key is None else {"dagster/partition": key}
    runs = instance.get_runs(dg.RunsFilter(job_name=job_name(benchmark), tags=tags), limit=1)
    return bool(runs)


def build_sensor(
    benchmark: Benchmark, job: UnresolvedAssetJobDefinition, partitions_name: str
) -> dg.SensorDefinition:
    """Add a partition and run it when the workflow hashes to a new version.

    The first version it ever sees is only registered (unless ``runFirstVersion``): starting
    the UI must not benchmark every bundled workflow with the configured judge. A version
    the online sensor registered first, from production traffic, is still run: it is new to
    this sensor (not its cursor) and has no run of the benchmark.
    """

    @dg.sensor(
        name=f"{benchmark.name}__workflow_changed",
        job=job,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def workflow_changed(
        context: dg.SensorEvaluationContext, n8n: N8nResource
    ) -> dg.SensorResult | dg.SkipReason:
        current = _hash_or_skip(benchmark, n8n)
        if isinstance(current, dg.SkipReason):
            return current
        shorten_old_keys(context.instance, partitions_name)
        fail_abandoned_runs(context.instance)  # a CLI killed mid-run left its run STARTED
        key = version_key(current)
        instance = context.instance
        registered = instance.has_dynamic_partition(partitions_name, key)
        if registered and (key == context.cursor or _benchmark_runs(instance, benchmark, key)):
            return dg.SkipReason(f"workflow version {key} is already a partition")
        register = [] if registered else [dg.AddDynamicPartitionsRequest(partitions_name, [key])]
        if registered:  # by production traffic (the online sensor), never benchmarked
            first = context.cursor is None and not _benchmark_runs(instance, benchmark)
        else:
            first = not instance.get_dynamic_partitions(partitions_name)
        if first and not benchmark.run_first_version:
            return dg.SensorResult(
                dynamic_partitions_requests=register,
                skip_reason=f"first version {key} registered without a run "
                "(launch it from the UI, or set runFirstVersion: true)",
                cursor=key,
            )
        return dg.SensorResult(
            dynamic_partitions_requests=register,
            run_requests=[
                dg.RunRequest(
                    partition_key=key, run_key=key, tags={"n8n_deepeval/trigger": "workflow_change"}
                )
            ],
            cursor=key,
        )

    return workflow_changed
