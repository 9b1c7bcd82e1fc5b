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
from n8n_deepeval_pipeline.orchestration.version_keys import register_versions, shorten_old_keys
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.variants import Member, family

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


def current_family(benchmark: Benchmark, n8n: N8nResource) -> list[Member]:
    """The workflow as it is now and each of the benchmark's variants of it."""
    workflow, _ = n8n.workflow(benchmark)
    return family(workflow, benchmark.variants)


def _family_or_skip(benchmark: Benchmark, n8n: N8nResource) -> list[Member] | dg.SkipReason:
    """The current workflow and its variants, or why a tick cannot read the workflow now."""
    try:
        return current_family(benchmark, n8n)
    except _UNREADABLE as error:
        return dg.SkipReason(str(error))


CALLS_SHARED_BY = "n8n_deepeval/calls_shared_by"
"""Run tag: how many versions call the workflow at the same time (a workflow and its
variants), so that each takes its share of ``target.maxConcurrency``."""


def _family_requests(members: list[Member], trigger: str) -> list[dg.RunRequest]:
    """A run per member, run keys per version; tagged so that they share the call slots."""
    tags = {"n8n_deepeval/trigger": trigger}
    if len(members) > 1:
        tags[CALLS_SHARED_BY] = str(len(members))
    return [
        dg.RunRequest(partition_key=member.key, run_key=member.key, tags=tags) for member in members
    ]


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
    # A red team alone has no scores: its versions' reports are judged again from the
    # attacks they stored.
    first = "benchmark_report" if benchmark.red_team_only else "metric_scores"
    scores = dg.AssetSelection.assets(dg.AssetKey([benchmark.name, first]))
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
    ) -> list[dg.RunRequest] | dg.SkipReason:
        members = _family_or_skip(benchmark, n8n)
        if isinstance(members, dg.SkipReason):
            return members
        hashes = [member.workflow_hash for member in members]
        register_versions(context.instance, partitions_name, hashes)
        # Run keys are per tick: the schedule re-runs versions that have run before.
        return [
            dg.RunRequest(partition_key=request.partition_key, tags=request.tags)
            for request in _family_requests(members, "schedule")
        ]

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

    The workflow's variants are versions too: registered after it, and run beside it. The
    first version it ever sees is only registered (unless ``runFirstVersion``): starting
    the UI must not benchmark every bundled workflow with the configured judge. A version
    of the workflow the online sensor registered first, from production traffic, is still
    run: this sensor never saw it (its cursor holds the versions it saw, joined by commas)
    and the benchmark never ran it.
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
        members = _family_or_skip(benchmark, n8n)
        if isinstance(members, dg.SkipReason):
            return members
        shorten_old_keys(context.instance, partitions_name)
        fail_abandoned_runs(context.instance)  # a CLI killed mid-run left its run STARTED
        instance = context.instance
        new = {m.key for m in members if not instance.has_dynamic_partition(partitions_name, m.key)}
        key, cursor = members[0].key, ",".join(m.key for m in members)
        # Production serves the workflow itself, never a variant: the online sensor may have
        # registered its version first. Without a cursor this sensor cannot tell, and runs
        # only what it registers.
        seen = None if context.cursor is None else set(context.cursor.split(","))
        unrun = (
            {key}
            if seen is not None
            and key not in new | seen
            and not _benchmark_runs(instance, benchmark, key)
            else set()
        )
        if not new and not unrun:
            return dg.SkipReason(f"workflow version {key} is already a partition")
        added = [m.key for m in members if m.key in new]
        register = [dg.AddDynamicPartitionsRequest(partitions_name, added)] if added else []
        first = bool(new) and not instance.get_dynamic_partitions(partitions_name)
        if first and not benchmark.run_first_version:
            return dg.SensorResult(
                dynamic_partitions_requests=register,
                skip_reason=f"first version {key} registered without a run "
                "(launch it from the UI, or set runFirstVersion: true)",
                cursor=cursor,
            )
        to_run = [m for m in members if m.key in new | unrun]
        return dg.SensorResult(
            dynamic_partitions_requests=register,
            run_requests=_family_requests(to_run, "workflow_change"),
            cursor=cursor,
        )

    return workflow_changed
