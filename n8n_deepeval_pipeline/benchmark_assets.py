"""The Dagster assets of one benchmark, partitioned by workflow hash.

Assets are thin: load the partition's upstream tables, call ``benchmark_tables``,
return a typed DataFrame. The DuckDB IO manager stores each as ``<benchmark>.<asset>``
and replaces the partition's rows on every materialisation.
"""

# No postponed annotations: Dagster inspects the annotations of asset functions.
from collections import Counter
from pathlib import Path
from statistics import fmean
from typing import Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline import benchmark_tables as tables_of
from n8n_deepeval_pipeline.benchmark_config import Benchmark
from n8n_deepeval_pipeline.dataset import load_dataset_rows
from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.recorded_outputs import recorded_outputs
from n8n_deepeval_pipeline.resources.judge import JudgeResource
from n8n_deepeval_pipeline.resources.score_journal import ScoreJournalResource
from n8n_deepeval_pipeline.resources.worker_pool import WorkerPoolResource
from n8n_deepeval_pipeline.runs import ExpandedRun, expand_runs
from n8n_deepeval_pipeline.tables import (
    AgentOutputRow,
    ConsistencyRow,
    DatasetRowRecord,
    ExpandedRunRow,
    MetricScoreRow,
    RunAggregateRow,
    WorkflowSnapshotRow,
    from_frame,
    to_frame,
)
from n8n_deepeval_pipeline.workflow_file import read_workflow

ASSET_NAMES = (
    "workflow_snapshot",
    "dataset_rows",
    "expanded_runs",
    "agent_outputs",
    "metric_scores",
    "run_aggregates",
    "consistency_stats",
)
_PARTITION_METADATA = {"partition_expr": "workflow_hash"}


class ScoringConfig(dg.Config):
    """Launch-time knobs of the scoring step."""

    timeout_s: float | None = None
    """Per-evaluation timeout for metrics without their own (default: the pool's)."""
    progress_every: int = 25
    """Log progress after this many finished evaluations."""


def partitions_for(benchmark: Benchmark) -> dg.DynamicPartitionsDefinition:
    """One partition per workflow version (its workflowHash)."""
    return dg.DynamicPartitionsDefinition(name=f"{benchmark.name}__workflow_hash")


def _key(benchmark: Benchmark, asset: str) -> dg.AssetKey:
    return dg.AssetKey([benchmark.name, asset])


def _ins(benchmark: Benchmark, *names: str) -> dict[str, dg.AssetIn]:
    return {name: dg.AssetIn(key=_key(benchmark, name)) for name in names}


def _summary_metadata(scores: list[MetricScoreRow]) -> dict[str, Any]:
    """Figures the UI charts across materialisations."""
    metadata: dict[str, Any] = {
        "rows": dg.MetadataValue.int(len(scores)),
        "pass_rate": dg.MetadataValue.float(fmean(s.success for s in scores) if scores else 0.0),
        "errors": dg.MetadataValue.int(sum(1 for s in scores if s.error_kind)),
        "judge_calls": dg.MetadataValue.int(sum(s.judge_calls for s in scores)),
        "judge_retries": dg.MetadataValue.int(sum(s.judge_retries for s in scores)),
        "cached_calls": dg.MetadataValue.int(sum(s.cached_calls for s in scores)),
        "tokens": dg.MetadataValue.int(sum(s.tokens for s in scores)),
        "cost_usd": dg.MetadataValue.float(sum(s.cost_usd or 0.0 for s in scores)),
        "dry_run_judge": dg.MetadataValue.bool(any(s.dry_run for s in scores)),
    }
    for metric in sorted({s.metric for s in scores}):
        values = [s.score for s in scores if s.metric == metric and s.score is not None]
        if values:
            metadata[f"mean_score/{metric}"] = dg.MetadataValue.float(fmean(values))
    return metadata


def build_benchmark_assets(
    benchmark: Benchmark, source: Path
) -> tuple[list[dg.AssetsDefinition], dg.DynamicPartitionsDefinition]:
    """The seven assets of a benchmark and their partitions definition."""
    partitions = partitions_for(benchmark)
    common: dict[str, Any] = {
        "key_prefix": [benchmark.name],
        "group_name": benchmark.name,
        "partitions_def": partitions,
        "metadata": _PARTITION_METADATA,
    }

    @dg.asset(
        name="workflow_snapshot", description="The workflow version of this partition.", **common
    )
    def workflow_snapshot(context: dg.AssetExecutionContext) -> pd.DataFrame:
        workflow = read_workflow(benchmark.workflow)
        row = tables_of.snapshot_row(workflow, benchmark.workflow, context.partition_key)
        context.add_output_metadata({"node_count": row.node_count, "name": row.name or ""})
        return to_frame(WorkflowSnapshotRow, [row])

    @dg.asset(name="dataset_rows", description="Dataset rows after filters and cap.", **common)
    def dataset_rows(context: dg.AssetExecutionContext) -> pd.DataFrame:
        records = tables_of.dataset_records(
            load_dataset_rows(benchmark.dataset), context.partition_key
        )
        context.add_output_metadata({"rows": len(records), "source": str(benchmark.dataset.path)})
        return to_frame(DatasetRowRecord, records)

    @dg.asset(
        name="expanded_runs",
        description="Dataset rows × runsPerRow with the seed's case and run ids.",
        ins=_ins(benchmark, "dataset_rows"),
        **common,
    )
    def expanded_runs(
        context: dg.AssetExecutionContext, dataset_rows: pd.DataFrame
    ) -> pd.DataFrame:
        rows = from_frame(DatasetRowRecord, dataset_rows)
        runs = expand_runs(
            context.partition_key,
            list(tables_of.stored_dataset_rows(rows).values()),
            benchmark.runs_per_row,
        )
        run_rows = tables_of.expanded_run_rows(
            runs, context.partition_key, benchmark.run_name or benchmark.name, None
        )
        context.add_output_metadata({"runs": len(run_rows)})
        return to_frame(ExpandedRunRow, run_rows)

    @dg.asset(
        name="agent_outputs",
        description="What the workflow produced for each run.",
        ins=_ins(benchmark, "expanded_runs", "dataset_rows"),
        # After the snapshot: outputs belong to the version it checked, nothing is read from it.
        deps=[_key(benchmark, "workflow_snapshot")],
        **common,
    )
    def agent_outputs(
        context: dg.AssetExecutionContext,
        expanded_runs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
    ) -> pd.DataFrame:
        runs = [
            ExpandedRun.model_validate(row.model_dump())
            for row in from_frame(ExpandedRunRow, expanded_runs)
        ]
        rows = tables_of.stored_dataset_rows(from_frame(DatasetRowRecord, dataset_rows))
        outputs = recorded_outputs(benchmark.target, runs, rows)
        failed = sum(1 for output in outputs if output.error)
        context.add_output_metadata({"runs": len(outputs), "runs_without_output": failed})
        return to_frame(AgentOutputRow, tables_of.agent_output_rows(outputs, context.partition_key))

    @dg.asset(
        name="metric_scores",
        description="One score per run and metric, computed in the worker pool.",
        ins=_ins(benchmark, "expanded_runs", "dataset_rows", "agent_outputs"),
        check_specs=[
            dg.AssetCheckSpec("every_run_scored", asset=_key(benchmark, "metric_scores")),
            dg.AssetCheckSpec("no_metric_errors", asset=_key(benchmark, "metric_scores")),
        ],
        **common,
    )
    def metric_scores(
        context: dg.AssetExecutionContext,
        config: ScoringConfig,
        worker_pool: WorkerPoolResource,
        judge: JudgeResource,
        score_journal: ScoreJournalResource,
        expanded_runs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
        agent_outputs: pd.DataFrame,
    ) -> Any:
        plan = tables_of.ScoringPlan(
            benchmark,
            from_frame(ExpandedRunRow, expanded_runs),
            from_frame(DatasetRowRecord, dataset_rows),
            from_frame(AgentOutputRow, agent_outputs),
            judge.spec_for(benchmark.judge),
            config.timeout_s or worker_pool.timeout_s,
            judge.prices(),
        )
        judge.shared_state().reset_breaker()  # an earlier step's open circuit is history
        if plan.judge.is_dry_run:
            context.log.warning("dry-run judge: judge-backed scores are placeholders")
        journal = score_journal.journal(benchmark.name, context.partition_key)
        scores, to_run = _resume(plan, journal.completed())
        resumed = len(scores)
        if scores:
            context.log.info(f"resuming: {len(scores)} rows kept from an interrupted attempt")
        scores += plan.rows_without_output()
        context.log.info(f"scoring {len(to_run)} evaluations on {worker_pool.size} workers")
        tasks = {task.task_id: task for task in to_run}
        for result in worker_pool.evaluate(to_run):
            journal.record(tasks[result.task_id], result)
            scores.append(plan.row_for(result))
            if len(scores) % config.progress_every == 0 or len(scores) == plan.total:
                context.log.info(f"scored {len(scores)}/{plan.total}")
        metadata = {
            **_summary_metadata(scores),
            **_pool_metadata(worker_pool),
            "evaluated": len(to_run),
            "resumed": resumed,
        }
        yield dg.Output(to_frame(MetricScoreRow, scores), metadata=metadata)
        journal.clear()  # the rows are stored: nothing left to resume
        yield from _score_checks(benchmark, scores, plan.total)

    @dg.asset(
        name="run_aggregates",
        description="Overall score and success per run under the pass rule.",
        ins=_ins(benchmark, "expanded_runs", "metric_scores"),
        **common,
    )
    def run_aggregates(
        context: dg.AssetExecutionContext, expanded_runs: pd.DataFrame, metric_scores: pd.DataFrame
    ) -> pd.DataFrame:
        rows = tables_of.run_aggregate_rows(
            benchmark,
            from_frame(ExpandedRunRow, expanded_runs),
            from_frame(MetricScoreRow, metric_scores),
        )
        passed = [row.overall_success for row in rows]
        context.add_output_metadata(
            {"runs": len(rows), "pass_rate": fmean(passed) if passed else 0.0}
        )
        return to_frame(RunAggregateRow, rows)

    @dg.asset(
        name="consistency_stats",
        description="Per-case consistency of repeated runs, pass@k and pass^k.",
        ins=_ins(
            benchmark,
            "expanded_runs",
            "run_aggregates",
            "metric_scores",
            "agent_outputs",
            "dataset_rows",
        ),
        **common,
    )
    def consistency_stats(
        context: dg.AssetExecutionContext,
        expanded_runs: pd.DataFrame,
        run_aggregates: pd.DataFrame,
        metric_scores: pd.DataFrame,
        agent_outputs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
    ) -> pd.DataFrame:
        rows = tables_of.consistency_rows(
            benchmark,
            from_frame(ExpandedRunRow, expanded_runs),
            from_frame(RunAggregateRow, run_aggregates),
            from_frame(MetricScoreRow, metric_scores),
            from_frame(AgentOutputRow, agent_outputs),
            from_frame(DatasetRowRecord, dataset_rows),
        )
        context.add_output_metadata(_consistency_metadata(rows))
        return to_frame(ConsistencyRow, rows)

    assets = [
        workflow_snapshot,
        dataset_rows,
        expanded_runs,
        agent_outputs,
        metric_scores,
        run_aggregates,
        consistency_stats,
    ]
    return assets, partitions


def _resume(
    plan: tables_of.ScoringPlan, kept: dict[str, EvaluationResult]
) -> tuple[list[MetricScoreRow], list[EvaluationTask]]:
    """Rows of evaluations an interrupted attempt finished, and the tasks still to run."""
    rows, to_run = [], []
    for task in plan.tasks:
        result = kept.get(task.fingerprint())
        if result is None:
            to_run.append(task)
        else:
            rows.append(plan.row_for(result.model_copy(update={"task_id": task.task_id})))
    return rows, to_run


def _pool_metadata(worker_pool: WorkerPoolResource) -> dict[str, Any]:
    stats = worker_pool.pool.stats()
    return {f"pool/{key}": value for key, value in stats.items() if value is not None}


def _score_checks(
    benchmark: Benchmark, scores: list[MetricScoreRow], expected: int
) -> list[dg.AssetCheckResult]:
    errors = Counter(score.error_kind for score in scores if score.error_kind)
    return [
        dg.AssetCheckResult(
            check_name="every_run_scored",
            asset_key=_key(benchmark, "metric_scores"),
            passed=len(scores) == expected,
            metadata={"rows": len(scores), "expected": expected},
        ),
        dg.AssetCheckResult(
            check_name="no_metric_errors",
            asset_key=_key(benchmark, "metric_scores"),
            passed=not errors,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={kind: count for kind, count in errors.items()},
        ),
    ]


def _consistency_metadata(rows: list[ConsistencyRow]) -> dict[str, Any]:
    def mean_of(values: list[float | None]) -> float:
        present = [value for value in values if value is not None]
        return fmean(present) if present else 0.0

    return {
        "cases": len(rows),
        "mean_cv": mean_of([row.cv for row in rows]),
        "mean_overall_consistency": mean_of([row.overall_consistency for row in rows]),
        "mean_pass_rate": mean_of([row.pass_rate for row in rows]),
    }
