"""One pure step per table: the rows of a partition from the rows before it.

The Dagster assets are thin wrappers: load the upstream rows, call one step here, store
the rows it returns. ``metric_scores`` is the exception that proves the rule: its step
is ``tables.evaluation_plan``, with the worker pool between its two halves.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import Benchmark, DatasetConfig, RecordedTarget
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.statistics.aggregate import MetricOutcome, aggregate_run, decided_by
from n8n_deepeval_pipeline.statistics.consistency import Basis, RunResult, case_consistency
from n8n_deepeval_pipeline.statistics.pass_direction import normalised
from n8n_deepeval_pipeline.tables.dataset_file import load_dataset_rows
from n8n_deepeval_pipeline.tables.ids import case_id, run_id
from n8n_deepeval_pipeline.tables.recorded_outputs import recorded_outputs
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
    WorkflowCheck,
    WorkflowSnapshot,
    scores_by_run,
)
from n8n_deepeval_pipeline.tables.run_groups import grouped_runs
from n8n_deepeval_pipeline.workflow.agent_tools import agent_tools
from n8n_deepeval_pipeline.workflow.checks import check_workflow
from n8n_deepeval_pipeline.workflow.hashing import (
    canonical_workflow_json,
    without_webhook_paths,
    workflow_hash,
)
from n8n_deepeval_pipeline.workflow.variants import Member, NodeOverrides, family


class PartitionMismatchError(ValueError):
    """The workflow file no longer hashes to the partition being materialised."""


def member_at(
    workflow: dict[str, Any], variants: Mapping[str, NodeOverrides], source: str, partition: str
) -> Member:
    """The workflow or the variant of it whose version is this partition (its key)."""
    members = family(workflow, variants)
    found = next((member for member in members if member.key == partition), None)
    if found is None:
        keys = ", ".join(f"{member.name} {member.key}" for member in members)
        raise PartitionMismatchError(
            f"{source} now hashes to {keys if variants else members[0].key}, not to partition "
            f"{partition}: that version is no longer there. Re-score its stored outputs with "
            "the benchmark's `…__rescore` job (backfill it in the UI) or `n8n-deepeval "
            "backfill FILE`."
        )
    return found


def workflow_snapshot(
    workflow: dict[str, Any],
    source: str,
    partition: str,
    variants: Mapping[str, NodeOverrides] | None = None,
) -> list[WorkflowSnapshot]:
    """The partition's version: the workflow, or one of its ``variants``.

    Refuses a workflow (file or n8n's) that no longer hashes to the partition. A variant's
    snapshot is its own graph, with its name and the workflow's hash.
    """
    member = member_at(workflow, variants or {}, source, partition)
    nodes = member.workflow.get("nodes") or []
    snapshot = WorkflowSnapshot(
        workflow_hash=member.workflow_hash,
        workflow_id=None if workflow.get("id") is None else str(workflow.get("id")),
        name=workflow.get("name"),
        node_count=len(nodes),
        source=source,
        fetched_at=datetime.now(UTC),
        canonical_json=canonical_workflow_json(without_webhook_paths(member.workflow)),
        variant=member.variant,
        base_hash=None if member.variant is None else workflow_hash(workflow),
    )
    return [snapshot]


def dataset_rows(
    config: DatasetConfig,
    version: str,
    records: list[dict[str, Any]] | None = None,
    conversational: bool = False,
) -> list[DatasetRow]:
    """The dataset after filters and the row cap, mapped fields in snake_case columns.

    ``version``: the full workflow hash. ``records``: the rows of an n8n Data Table;
    without them the dataset file is read. ``conversational``: the rows are conversational
    goldens (a simulated benchmark).
    """
    return load_dataset_rows(config, version, records, conversational)


def expanded_runs(rows: list[DatasetRow], runs_per_row: int, run_name: str) -> list[ExpandedRun]:
    """Rows × runsPerRow, row-major: all runs of the first row, then the next row.

    Case and run ids carry the full workflow hash, as the seed's do.
    """
    runs: list[ExpandedRun] = []
    for row in rows:
        case = case_id(row.workflow_hash, row.row_id)
        runs.extend(
            ExpandedRun(
                workflow_hash=row.workflow_hash,
                run_id=run_id(case, index),
                case_id=case,
                run_index=index,
                row_id=row.row_id,
                run_name=run_name,
            )
            for index in range(runs_per_row)
        )
    return runs


def agent_outputs(
    target: RecordedTarget, runs: list[ExpandedRun], rows: list[DatasetRow], runs_per_row: int
) -> list[AgentOutput]:
    """What the workflow produced for each run (one row per run, errors included)."""
    return recorded_outputs(target, runs, {row.row_id: row for row in rows}, runs_per_row)


def deciding_metrics(
    benchmark: Benchmark, scores: list[MetricScore], uncalibrated: Collection[str] = ()
) -> set[str]:
    """The metrics whose results decide a run under the pass rule.

    ``Benchmark.counted_labels`` (aggregate.metrics, default all but head-to-head ones),
    less the dry-run judge's placeholders when a score that needs no judge is among them:
    a placeholder is no judgement, and must not decide a first run's pass rate. When only
    placeholders are left, they decide (the summary says so). Then, the same way, less the
    ``uncalibrated`` metrics that ``calibration.gate`` keeps from deciding.
    """
    real = decided_by(benchmark.counted_labels, {s.metric for s in scores if s.dry_run})
    return decided_by(real, uncalibrated)


def run_aggregates(
    benchmark: Benchmark,
    runs: list[ExpandedRun],
    scores: list[MetricScore],
    uncalibrated: Collection[str] = (),
) -> list[RunAggregate]:
    """One aggregate per run over the metrics that decide it (``deciding_metrics``)."""
    counted = deciding_metrics(benchmark, scores, uncalibrated)
    by_run = scores_by_run(scores)
    rows = []
    for run in runs:
        outcomes = [
            MetricOutcome(
                metric=score.metric,
                score=score.score,
                normalised_score=normalised(score.score, score.direction),
                success=score.success,
                error_kind=score.error_kind,
            )
            for score in by_run[run.run_id]
            if score.metric in counted
        ]
        result = aggregate_run(outcomes, benchmark.aggregate.pass_rule)
        costs = [score.cost_usd for score in by_run[run.run_id] if score.cost_usd is not None]
        rows.append(
            RunAggregate(
                workflow_hash=run.workflow_hash,
                run_id=run.run_id,
                case_id=run.case_id,
                overall_score=result.overall_score,
                raw_mean_score=result.raw_mean_score,
                overall_success=result.overall_success,
                pass_rule=benchmark.aggregate.pass_rule,
                metrics_passed=result.passed,
                metrics_counted=result.counted,
                metric_errors=result.errors,
                judge_calls=sum(score.judge_calls for score in by_run[run.run_id]),
                tokens=sum(score.tokens for score in by_run[run.run_id]),
                cost_usd=sum(costs) if costs else None,
                metrics=[outcome.model_dump(exclude={"normalised_score"}) for outcome in outcomes],
            )
        )
    return rows


def consistency_stats(
    benchmark: Benchmark,
    runs: list[ExpandedRun],
    aggregates: list[RunAggregate],
    scores: list[MetricScore],
    outputs: list[AgentOutput],
    dataset: list[DatasetRow],
) -> list[ConsistencyStats]:
    """One row per case, or per value of another evalContext field (consistency.groupByField).

    Groups and labels: ``tables.run_groups``.
    """
    config = benchmark.consistency
    aggregate_by_run = {row.run_id: row for row in aggregates}
    output_by_run = {output.run_id: output for output in outputs}
    record_by_row = {record.row_id: record for record in dataset}
    scores_of = scores_by_run(scores)
    groups: dict[str, list[RunResult]] = defaultdict(list)
    for key, run, label in grouped_runs(
        benchmark, runs, aggregate_by_run, output_by_run, record_by_row
    ):
        aggregate = aggregate_by_run[run.run_id]
        groups[key].append(
            RunResult(
                overall_score=aggregate.overall_score,
                overall_success=aggregate.overall_success,
                metric_scores={s.metric: s.score for s in scores_of[run.run_id]},
                metric_success={s.metric: s.success for s in scores_of[run.run_id]},
                label=label,
            )
        )
    partition = runs[0].workflow_hash if runs else ""
    return [
        _consistency_row(partition, key, results, config.consistency_basis)
        for key, results in groups.items()
    ]


def _consistency_row(
    partition: str, case: str, results: list[RunResult], basis: Basis
) -> ConsistencyStats:
    stats = case_consistency(results, basis)
    labels = stats.labels
    return ConsistencyStats(
        workflow_hash=partition,
        case_id=case,
        n_runs=stats.n_runs,
        mean_score=stats.score.mean,
        variance=stats.score.variance,
        std=stats.score.std,
        cv=stats.score.cv,
        min_score=stats.score.min,
        max_score=stats.score.max,
        pass_rate=stats.pass_rate,
        majority_success=stats.majority_success,
        pass_at_k=stats.pass_at_k,
        pass_hat_k=stats.pass_hat_k,
        metric_stats=[m.model_dump() for m in stats.per_metric],
        label_distribution=labels.distribution if labels else None,
        label_entropy=labels.entropy if labels else None,
        label_normalized_entropy=labels.normalized_entropy if labels else None,
        label_agreement=labels.agreement if labels else None,
        majority_label=labels.majority_label if labels else None,
        consistency_basis=basis,
        overall_consistency=stats.overall_consistency,
    )


def workflow_checks(snapshots: list[WorkflowSnapshot]) -> list[WorkflowCheck]:
    """The deterministic checks of the partition's stored workflow (its canonical JSON).

    Reads only the snapshot, so a re-score or backfill grades versions n8n no longer has.
    """
    return [
        WorkflowCheck(workflow_hash=snapshot.workflow_hash, **result.model_dump())
        for snapshot in snapshots
        for result in check_workflow(json.loads(snapshot.canonical_json))
    ]


def snapshot_tools(snapshots: list[WorkflowSnapshot]) -> list[AgentTool] | None:
    """The tools connected to the agents of the partition's stored workflow (None: no snapshot)."""
    if not snapshots:
        return None
    return agent_tools(json.loads(snapshots[0].canonical_json))
