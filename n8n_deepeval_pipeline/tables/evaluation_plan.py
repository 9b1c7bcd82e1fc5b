"""The ``metric_scores`` step: every (run, metric) pair as a task, and each result as a row.

The worker pool sits between the two halves, so this step is a plan rather than one
function: ``EvaluationPlan`` lists the tasks to send and the rows known up front (runs
without an output), and turns each finished result into its ``MetricScore`` row.
"""

from __future__ import annotations

from typing import Any

from n8n_deepeval_pipeline.benchmark_config import Benchmark
from n8n_deepeval_pipeline.evaluation import EvaluationItem, EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.n8n_data.json_fields import structured
from n8n_deepeval_pipeline.statistics.pass_direction import effective_threshold, passes
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, MetricScore


def _history_messages(turns: Any) -> Any:
    """Dataset history as its list of messages, also from JSON text or ``{messages: […]}``."""
    try:
        value = structured(turns, "chat history", ValueError)
    except ValueError:
        return turns  # not JSON: the worker's error names the field
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return value


def conversation(row: DatasetRow, output: AgentOutput) -> Any:
    """The run's conversation.

    The memory recorded after the run, or else the dataset's history followed by this
    run's input and output.
    """
    if output.turns is not None:
        return output.turns
    history = _history_messages(row.turns)
    if not isinstance(history, list):
        return history  # absent, or a shape the worker reports as such
    return [
        *history,
        {"role": "user", "content": row.input or ""},
        {"role": "assistant", "content": output.actual_output or ""},
    ]


def evaluation_item(row: DatasetRow, output: AgentOutput) -> EvaluationItem:
    """What a metric reads about one run: its dataset row joined with its output."""
    return EvaluationItem(
        input=row.input,
        actual_output=output.actual_output,
        expected_output=row.expected_output,
        context=row.context,
        retrieval_context=row.retrieval_context,
        expected_tools=row.expected_tools,
        intermediate_steps=output.intermediate_steps,
        turns=conversation(row, output),
        chatbot_role=row.chatbot_role,
        expected_outcome=row.expected_outcome,
        scenario=row.scenario,
    )


class EvaluationPlan:
    """Every (run, metric) pair of a partition: tasks to send, and errors known up front."""

    def __init__(
        self,
        benchmark: Benchmark,
        runs: list[ExpandedRun],
        rows: list[DatasetRow],
        outputs: list[AgentOutput],
        judge: JudgeSpec,
        default_timeout_s: float,
        prices: PriceTable | None = None,
    ) -> None:
        self.judge = judge
        self.prices = prices or PriceTable()
        self.tasks: list[EvaluationTask] = []
        self.without_output: list[tuple[ExpandedRun, MetricConfig, AgentOutput | None]] = []
        self._keys: dict[int, tuple[ExpandedRun, MetricConfig]] = {}
        rows_by_id = {row.row_id: row for row in rows}
        outputs_by_run = {output.run_id: output for output in outputs}
        for run in runs:
            output = outputs_by_run.get(run.run_id)
            for config in benchmark.metrics:
                if output is None or output.error is not None:
                    self.without_output.append((run, config, output))
                    continue
                item = evaluation_item(rows_by_id[run.row_id], output)
                self._add_task(run, config, item, config.timeout_s or default_timeout_s)

    def _add_task(
        self, run: ExpandedRun, config: MetricConfig, item: EvaluationItem, timeout_s: float
    ) -> None:
        task_id = len(self.tasks)
        self._keys[task_id] = (run, config)
        self.tasks.append(
            EvaluationTask(
                task_id=task_id,
                run_id=run.run_id,
                metric_label=config.result_label(),
                config=config.model_dump(),
                item=item,
                judge=self.judge,
                timeout_s=timeout_s,
                clean_session=config.clean_session,
            )
        )

    @property
    def total(self) -> int:
        """Score rows this plan produces."""
        return len(self.tasks) + len(self.without_output)

    def row_for(self, result: EvaluationResult) -> MetricScore:
        """The stored row of a finished task."""
        run, config = self._keys[result.task_id]
        return metric_score(run, config, result, self.judge, self.prices)

    def rows_without_output(self) -> list[MetricScore]:
        """Error rows for runs whose workflow produced nothing."""
        return [
            metric_score(run, config, _no_output(output), self.judge, self.prices)
            for run, config, output in self.without_output
        ]

    def resume(
        self, kept: dict[str, EvaluationResult]
    ) -> tuple[list[MetricScore], list[EvaluationTask]]:
        """Rows of evaluations an interrupted attempt finished, and the tasks still to run."""
        rows, to_run = [], []
        for task in self.tasks:
            result = kept.get(task.fingerprint())
            if result is None:
                to_run.append(task)
            else:
                rows.append(self.row_for(result.model_copy(update={"task_id": task.task_id})))
        return rows, to_run


def _no_output(output: AgentOutput | None) -> EvaluationResult:
    """Why a run has no score: the target failed, or nothing was stored for it."""
    if output is None:
        return EvaluationResult.failed(-1, "no_output", "no agent output stored for this run")
    return EvaluationResult.failed(-1, output.error_kind or "no_output", output.error or "")


def metric_score(
    run: ExpandedRun,
    config: MetricConfig,
    result: EvaluationResult,
    judge: JudgeSpec,
    prices: PriceTable,
) -> MetricScore:
    """Score, pass/fail under the metric's direction, and what the evaluation cost."""
    entry = entry_for(config)
    threshold = effective_threshold(config.threshold, config.strict_mode, entry.direction)
    uses_judge = entry.needs_judge or (
        entry.accepts_judge and result.judge_calls + result.cached_calls > 0
    )
    reason = result.reason
    if uses_judge and judge.marker and reason is not None:
        reason = f"{judge.marker} {reason}"
    return MetricScore(
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
