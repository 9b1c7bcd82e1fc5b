"""Each table of a benchmark, built from the tables before it (pure functions).

The Dagster assets are thin wrappers around these: they load the upstream tables of
one partition, call one function here, and store its rows.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.aggregate import MetricOutcome, aggregate_run
from n8n_deepeval_pipeline.benchmark_config import Benchmark
from n8n_deepeval_pipeline.consistency import RunResult, case_consistency
from n8n_deepeval_pipeline.dataset import DatasetRow
from n8n_deepeval_pipeline.evaluation import (
    EvaluationItem,
    EvaluationResult,
    EvaluationTask,
    JudgeSpec,
)
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.recorded_outputs import AgentOutput, as_text
from n8n_deepeval_pipeline.runs import ExpandedRun
from n8n_deepeval_pipeline.scoring import effective_threshold, normalised, passes
from n8n_deepeval_pipeline.tables import (
    AgentOutputRow,
    ConsistencyRow,
    DatasetRowRecord,
    ExpandedRunRow,
    MetricScoreRow,
    RunAggregateRow,
    WorkflowSnapshotRow,
)
from n8n_deepeval_pipeline.workflow_hash import canonical_workflow_json, workflow_hash


class PartitionMismatchError(ValueError):
    """The workflow file no longer hashes to the partition being materialised."""


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def snapshot_row(workflow: dict[str, Any], source: Path, partition: str) -> WorkflowSnapshotRow:
    """The workflow version of this partition; refuses a file that hashes differently."""
    current = workflow_hash(workflow)
    if current != partition:
        raise PartitionMismatchError(
            f"{source} now hashes to {current}, not to partition {partition}: that version "
            "is no longer on disk. Re-score it from stored outputs with "
            "`n8n-deepeval backfill FILE --from metric_scores`."
        )
    nodes = workflow.get("nodes") or []
    return WorkflowSnapshotRow(
        workflow_hash=partition,
        workflow_id=None if workflow.get("id") is None else str(workflow.get("id")),
        name=workflow.get("name"),
        node_count=len(nodes),
        source=str(source),
        fetched_at=datetime.now(UTC),
        canonical_json=canonical_workflow_json(workflow),
    )


def dataset_records(rows: list[DatasetRow], partition: str) -> list[DatasetRowRecord]:
    """The dataset rows as stored, mapped fields in snake_case columns."""
    return [
        DatasetRowRecord(
            workflow_hash=partition,
            row_id=row.row_id,
            position=row.position,
            input=as_text(row.fields.get("input")),
            expected_output=as_text(row.fields.get("expectedOutput")),
            context=_json(row.fields.get("context")),
            retrieval_context=_json(row.fields.get("retrievalContext")),
            expected_tools=_json(row.fields.get("expectedTools")),
            label=as_text(row.fields.get("label")),
            turns=_json(row.fields.get("turns")),
            chatbot_role=as_text(row.fields.get("chatbotRole")),
            expected_outcome=as_text(row.fields.get("expectedOutcome")),
            scenario=as_text(row.fields.get("scenario")),
            raw=json.dumps(row.raw, ensure_ascii=False, default=str),
        )
        for row in rows
    ]


def stored_dataset_rows(records: list[DatasetRowRecord]) -> dict[str, DatasetRow]:
    """Dataset rows as the recorded target reads them, by row id."""
    return {
        record.row_id: DatasetRow(
            row_id=record.row_id, position=record.position, fields={}, raw=json.loads(record.raw)
        )
        for record in records
    }


def expanded_run_rows(
    runs: list[ExpandedRun], partition: str, run_name: str, data_table_id: str | None
) -> list[ExpandedRunRow]:
    """The runs as stored."""
    return [
        ExpandedRunRow(
            workflow_hash=partition,
            run_name=run_name,
            data_table_id=data_table_id,
            **run.model_dump(),
        )
        for run in runs
    ]


def agent_output_rows(outputs: list[AgentOutput], partition: str) -> list[AgentOutputRow]:
    """The workflow outputs as stored."""
    return [
        AgentOutputRow(
            workflow_hash=partition,
            run_id=output.run_id,
            actual_output=output.actual_output,
            intermediate_steps=_json(output.intermediate_steps),
            turns=_json(output.turns),
            label=output.label,
            session_id=output.session_id,
            latency_s=output.latency_s,
            error=output.error,
        )
        for output in outputs
    ]


def conversation(row: DatasetRowRecord, output: AgentOutputRow) -> list[Any] | None:
    """The run's conversation.

    The memory recorded after the run, or else the dataset's history followed by this
    run's input and output.
    """
    if output.turns is not None:
        recorded: list[Any] = json.loads(output.turns)
        return recorded
    if row.turns is None:
        return None
    history = json.loads(row.turns)
    if not isinstance(history, list):
        return None
    return [
        *history,
        {"role": "user", "content": row.input or ""},
        {"role": "assistant", "content": output.actual_output or ""},
    ]


def _item(row: DatasetRowRecord, output: AgentOutputRow) -> EvaluationItem:
    return EvaluationItem(
        input=row.input,
        actual_output=output.actual_output,
        expected_output=row.expected_output,
        context=_loads(row.context),
        retrieval_context=_loads(row.retrieval_context),
        expected_tools=_loads(row.expected_tools),
        intermediate_steps=_loads(output.intermediate_steps),
        turns=conversation(row, output),
        chatbot_role=row.chatbot_role,
        expected_outcome=row.expected_outcome,
        scenario=row.scenario,
    )


class ScoringPlan:
    """Every (run, metric) pair of a partition: tasks to send, and errors known up front."""

    def __init__(
        self,
        benchmark: Benchmark,
        runs: list[ExpandedRunRow],
        rows: list[DatasetRowRecord],
        outputs: list[AgentOutputRow],
        judge: JudgeSpec,
        default_timeout_s: float,
        prices: PriceTable | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.judge = judge
        self.prices = prices or PriceTable()
        self.tasks: list[EvaluationTask] = []
        self.without_output: list[tuple[ExpandedRunRow, MetricConfig, str]] = []
        self._keys: dict[int, tuple[ExpandedRunRow, MetricConfig]] = {}
        rows_by_id = {row.row_id: row for row in rows}
        outputs_by_run = {output.run_id: output for output in outputs}
        for run in runs:
            output = outputs_by_run.get(run.run_id)
            for config in benchmark.metrics:
                if output is None or output.error is not None:
                    reason = output.error if output else "no agent output stored for this run"
                    self.without_output.append((run, config, reason or "no output"))
                    continue
                task_id = len(self.tasks)
                self._keys[task_id] = (run, config)
                self.tasks.append(
                    EvaluationTask(
                        task_id=task_id,
                        run_id=run.run_id,
                        metric_label=config.result_label(),
                        config=config.model_dump(),
                        item=_item(rows_by_id[run.row_id], output),
                        judge=judge,
                        timeout_s=config.timeout_s or default_timeout_s,
                        clean_session=config.clean_session,
                    )
                )

    @property
    def total(self) -> int:
        """Score rows this plan produces."""
        return len(self.tasks) + len(self.without_output)

    def row_for(self, result: EvaluationResult) -> MetricScoreRow:
        """The stored row of a finished task."""
        run, config = self._keys[result.task_id]
        return metric_score_row(run, config, result, self.judge, self.prices)

    def rows_without_output(self) -> list[MetricScoreRow]:
        """Error rows for runs whose workflow produced nothing."""
        return [
            metric_score_row(
                run,
                config,
                EvaluationResult.failed(-1, "no_output", reason),
                self.judge,
                self.prices,
            )
            for run, config, reason in self.without_output
        ]


def metric_score_row(
    run: ExpandedRunRow,
    config: MetricConfig,
    result: EvaluationResult,
    judge: JudgeSpec,
    prices: PriceTable,
) -> MetricScoreRow:
    """Score, pass/fail under the metric's direction, and what the evaluation cost."""
    entry = entry_for(config)
    threshold = effective_threshold(config.threshold, config.strict_mode, entry.direction)
    uses_judge = entry.needs_judge or (
        entry.accepts_judge and result.judge_calls + result.cached_calls > 0
    )
    reason = result.reason
    if uses_judge and judge.marker and reason is not None:
        reason = f"{judge.marker} {reason}"
    return MetricScoreRow(
        workflow_hash=run.workflow_hash,
        run_id=run.run_id,
        case_id=run.case_id,
        metric=config.result_label(),
        metric_slug=config.metric,
        score=result.score,
        threshold=threshold,
        success=result.error_kind is None and passes(result.score, threshold, entry.direction),
        direction=entry.direction,
        reason=reason,
        error=result.error,
        error_kind=result.error_kind,
        judge=judge.label if uses_judge else None,
        dry_run=uses_judge and judge.is_dry_run,
        judge_calls=result.judge_calls,
        judge_retries=result.judge_retries,
        cached_calls=result.cached_calls,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        tokens=result.prompt_tokens + result.completion_tokens,
        cost_usd=prices.cost(judge.model, result.prompt_tokens, result.completion_tokens)
        if uses_judge
        else None,
        latency_s=result.latency_s,
    )


def run_aggregate_rows(
    benchmark: Benchmark, runs: list[ExpandedRunRow], scores: list[MetricScoreRow]
) -> list[RunAggregateRow]:
    """One aggregate per run over the metrics that count (aggregate.metrics, default all)."""
    counted = set(benchmark.aggregate.metrics or benchmark.metric_labels)
    by_run: dict[str, list[MetricScoreRow]] = defaultdict(list)
    for score in scores:
        by_run[score.run_id].append(score)
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
            RunAggregateRow(
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
                metrics=json.dumps(
                    [outcome.model_dump(exclude={"normalised_score"}) for outcome in outcomes]
                ),
            )
        )
    return rows


def consistency_rows(
    benchmark: Benchmark,
    runs: list[ExpandedRunRow],
    aggregates: list[RunAggregateRow],
    scores: list[MetricScoreRow],
    outputs: list[AgentOutputRow],
    dataset: list[DatasetRowRecord],
) -> list[ConsistencyRow]:
    """One row per case (or per row id, by consistency.groupByField)."""
    config = benchmark.consistency
    aggregate_by_run = {row.run_id: row for row in aggregates}
    output_by_run = {output.run_id: output for output in outputs}
    record_by_row = {record.row_id: record for record in dataset}
    scores_by_run: dict[str, list[MetricScoreRow]] = defaultdict(list)
    for score in scores:
        scores_by_run[score.run_id].append(score)
    groups: dict[str, list[RunResult]] = defaultdict(list)
    for run in runs:
        aggregate = aggregate_by_run[run.run_id]
        key = run.case_id if config.group_by_field == "caseId" else run.row_id
        groups[key].append(
            RunResult(
                overall_score=aggregate.overall_score,
                overall_success=aggregate.overall_success,
                metric_scores={s.metric: s.score for s in scores_by_run[run.run_id]},
                metric_success={s.metric: s.success for s in scores_by_run[run.run_id]},
                label=run_label(
                    config.label_field, output_by_run.get(run.run_id), record_by_row[run.row_id]
                ),
            )
        )
    partition = runs[0].workflow_hash if runs else ""
    return [
        _consistency_row(partition, key, results, config.consistency_basis)
        for key, results in groups.items()
    ]


def run_label(
    label_field: str | None, output: AgentOutputRow | None, row: DatasetRowRecord
) -> str | None:
    """The run's categorical label.

    ``label``: the recorded label, else the dataset's mapped label; ``output``: the
    output text; ``row.<column>``: a dataset column.
    """
    if not label_field or output is None:
        return None
    if label_field == "label":
        return output.label if output.label is not None else row.label
    if label_field in ("output", "actualOutput"):
        return output.actual_output
    value = json.loads(row.raw).get(label_field.removeprefix("row."))
    return None if value is None else str(value)


def _consistency_row(
    partition: str, case: str, results: list[RunResult], basis: Any
) -> ConsistencyRow:
    stats = case_consistency(results, basis)
    labels = stats.labels
    return ConsistencyRow(
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
        pass_at_k=json.dumps(stats.pass_at_k),
        pass_hat_k=json.dumps(stats.pass_hat_k),
        metric_stats=json.dumps([m.model_dump() for m in stats.per_metric]),
        label_distribution=json.dumps(labels.distribution) if labels else None,
        label_entropy=labels.entropy if labels else None,
        label_normalized_entropy=labels.normalized_entropy if labels else None,
        label_agreement=labels.agreement if labels else None,
        majority_label=labels.majority_label if labels else None,
        consistency_basis=basis,
        overall_consistency=stats.overall_consistency,
    )
