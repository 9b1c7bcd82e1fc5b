"""Run evaluations inside a worker process, several at once, each in a context of its own."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Iterable
from typing import Any

from deepeval.config.eval_mode import EvalMode, resolve_eval_mode
from pydantic import ValidationError

from n8n_deepeval_pipeline.evaluation import (
    FINAL_ERROR_KINDS,
    EvaluationResult,
    EvaluationTask,
    JudgeVote,
)
from n8n_deepeval_pipeline.judging.call_ledger import CallLedger
from n8n_deepeval_pipeline.judging.call_log import JudgeCall
from n8n_deepeval_pipeline.judging.failures import JUDGE_FAILURES, JudgeOutputError, failure_kind
from n8n_deepeval_pipeline.judging.judge import (
    JUDGE_SCOPE,
    JudgeScope,
    PipelineJudge,
    UsageCounter,
)
from n8n_deepeval_pipeline.judging.pacer import HeldBack
from n8n_deepeval_pipeline.judging.retry_policy import RATE_LIMIT_SHARE
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.worker.arena_order import keep_arena_order
from n8n_deepeval_pipeline.worker.image_fields import reads_images, text_only
from n8n_deepeval_pipeline.worker.isolation import (
    ModuleSnapshot,
    reset_trace_manager,
    trace_manager_is_clean,
)
from n8n_deepeval_pipeline.worker.metric_builder import construct_metric
from n8n_deepeval_pipeline.worker.test_case_builder import (
    MissingInputError,
    build_arena_test_case,
    build_test_case,
    check_inputs,
)
from n8n_deepeval_pipeline.worker.warming import prepare_metrics, warm_up


class Evaluator:
    """Evaluates tasks, several at once; keeps one judge (and its HTTP client) per spec.

    Each evaluation runs as its own asyncio task in a fresh context, with its own usage
    counter and cache namespace (``judging.judge.JUDGE_SCOPE``), so evaluations in flight
    together never share traces, judge usage, cost or reasons. Warming imports every
    catalog metric and snapshots DeepEval's module state; ``tidy`` puts it back (see
    ``worker.isolation``) whenever no evaluation is in flight.
    """

    def __init__(self) -> None:
        self._judges: dict[tuple[str, str | None], Any] = {}
        warm_up()
        # What every metric would resolve from DeepEval's settings: the environment is the
        # worker's, fixed at its start.
        self._eval_mode = resolve_eval_mode()
        self._snapshot = ModuleSnapshot()
        self.repairs = 0

    def _judge(self, spec: JudgeSpec) -> PipelineJudge:
        # The dump shows a key as asterisks: two judges differing only in their key differ.
        key = (spec.model_dump_json(), spec.api_key.get_secret_value() if spec.api_key else None)
        if key not in self._judges:
            self._judges[key] = PipelineJudge(spec, UsageCounter())
        judge: PipelineJudge = self._judges[key]
        return judge

    async def evaluate(self, task: EvaluationTask) -> EvaluationResult:
        """Score one task; any failure becomes an error result, never an exception.

        A panel's task is scored once per judge, one after the other, each with a fresh
        metric and context. The error is redacted here, whatever raised it: it is stored,
        logged and shown.
        """
        # Rate-limit answers are retried while the evaluation has time (a panel's judges
        # share it), and end before the pool's timeout would end the worker.
        deadline = time.monotonic() + RATE_LIMIT_SHARE * task.timeout_s
        if not task.panel:
            return await self._evaluate_with(task, task.judge, deadline)
        started = time.perf_counter()
        votes = []
        for judge in task.panel:
            result = await self._evaluate_with(task, judge, deadline)
            if result.error_kind in FINAL_ERROR_KINDS:
                return result  # the config or the item: every judge would say the same
            votes.append(JudgeVote.model_validate({**result.model_dump(), "judge": judge.label}))
        panel = EvaluationResult.of_panel(task.task_id, votes)
        return panel.model_copy(update={"latency_s": round(time.perf_counter() - started, 4)})

    async def _evaluate_with(
        self, task: EvaluationTask, judge: JudgeSpec, deadline: float
    ) -> EvaluationResult:
        """Score one task with one judge, in a context of its own."""
        usage = UsageCounter(
            CallLedger(task.ledger) if task.ledger else None, keep_calls=task.keep_judge_calls
        )
        # Each run index has its own cache namespace: repeated runs stay real re-samples.
        namespace = task.run_id.rsplit(":", 1)[-1] if judge.cache_scope == "run" else "shared"
        started = time.perf_counter()
        started_at = time.time() if task.keep_judge_calls else None

        async def scoped() -> EvaluationResult:
            JUDGE_SCOPE.set(JudgeScope(usage, namespace, deadline))
            return await self._score(task, judge)

        # A fresh context: context variables set by tracing cannot leak into another task.
        result = await asyncio.create_task(scoped(), context=contextvars.Context())
        return result.model_copy(
            update={
                "error": redact(result.error, task.secrets) if result.error else None,
                "latency_s": round(time.perf_counter() - started, 4),
                "judge_calls": usage.calls,
                "judge_retries": usage.retries,
                "cached_calls": usage.cached,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "score_path": usage.score_path,
                "started_at": started_at,
                "judge_call_log": _redacted(usage.call_log, task.secrets),
            }
        )

    def prepare(self, metrics: Iterable[str], providers: Iterable[str]) -> int:
        """Ready these catalog metrics for these judge providers before workers are forked.

        See ``worker.warming``.
        """
        return prepare_metrics(metrics, providers)

    @staticmethod
    def held_back() -> int:
        """Judge calls of this worker that the judges' pacing holds back now."""
        return HeldBack.calls

    def tidy(self) -> bool:
        """Put DeepEval's globals back (no evaluation in flight); whether they are clean."""
        reset_trace_manager()
        self.repairs += self._snapshot.restore()
        return trace_manager_is_clean()

    async def _score(self, task: EvaluationTask, judge_spec: JudgeSpec) -> EvaluationResult:
        entry = CATALOG[task.config["metric"]]
        try:
            config = entry.config_model.model_validate(task.config)
        except ValidationError as error:
            return EvaluationResult.failed(task.task_id, "invalid_config", _first_line(error))
        try:
            needs_judge = entry.needs_judge or entry.accepts_judge
            judge = self._judge(judge_spec) if needs_judge else None
            score, reason = await _run(entry, config, task, judge, self._eval_mode)
        except MissingInputError as error:
            return EvaluationResult.failed(task.task_id, "missing_input", str(error))
        except JUDGE_FAILURES as error:
            kind = failure_kind(error) or "judge_error"
            return EvaluationResult.failed(task.task_id, kind, str(error))
        except Exception as error:
            return EvaluationResult.failed(
                task.task_id, "metric_error", f"{type(error).__name__}: {_first_line(error)}"
            )
        if score is None:
            return EvaluationResult.failed(task.task_id, "metric_error", reason or "no score")
        return EvaluationResult(task_id=task.task_id, score=score, reason=reason)


async def _run(
    entry: MetricEntry,
    config: MetricConfig,
    task: EvaluationTask,
    judge: Any,
    eval_mode: EvalMode,
) -> tuple[float | None, str | None]:
    """Score with the entry's own runner, or with its DeepEval metric.

    A runner calls the judge synchronously: it runs in a thread (with this context). Only a
    metric that is shown images gets them as images (``image_fields``).
    """
    if not reads_images(entry):
        task = task.model_copy(update={"item": text_only(task.item)})
    if entry.runner is None:
        return await _measure(entry, config, task, judge, eval_mode)
    check_inputs(entry, config, task.item)
    return await asyncio.to_thread(entry.runner, config, task.item, judge)


async def _measure(
    entry: MetricEntry,
    config: MetricConfig,
    task: EvaluationTask,
    judge: Any,
    eval_mode: EvalMode,
) -> tuple[float | None, str | None]:
    """Run the DeepEval metric; report the seed's score where DeepEval's is its complement."""
    if entry.head_to_head:
        return await _head_to_head(entry, config, task, judge, eval_mode)
    test_case = build_test_case(entry, config, task.item)
    metric = construct_metric(entry, config, judge, eval_mode)
    await metric.a_measure(test_case, _show_indicator=False)
    if metric.score is None:
        return None, str(getattr(metric, "error", None) or "the metric returned no score")
    score = float(metric.score)
    reason = metric.reason
    if entry.complement_score:
        reason = f"(DeepEval score {score:.3f}; reported as 1 − score) {reason or ''}".strip()
        score = 1.0 - score
    return score, reason


async def _head_to_head(
    entry: MetricEntry,
    config: MetricConfig,
    task: EvaluationTask,
    judge: Any,
    eval_mode: EvalMode,
) -> tuple[float | None, str | None]:
    """DeepEval's arena metric on the run and its opponent's: 1 for a win, 0 for a loss."""
    test_case = build_arena_test_case(entry, config, task.item)
    sides = task.item.head_to_head
    assert sides is not None  # the builder refuses an item without its opponent
    # An arena metric (DeepEval's BaseArenaMetric): it measures contestants, returns a name.
    metric: Any = construct_metric(entry, config, judge, eval_mode)
    keep_arena_order()
    try:
        winner = await metric.a_measure(test_case, _show_indicator=False)
    except KeyError as error:
        # DeepEval maps the masked name the judge gave back to a contestant; a name that is
        # no contestant's raises a bare KeyError there (4.3.1 defines nothing else): the
        # judge's answer is what failed, as for any answer that does not fit.
        raise JudgeOutputError(
            f"the judge named {error.args[0]!r} as the winner, which is not one of the "
            "contestants (Alice, Bob) DeepEval's ArenaGEval showed it"
        ) from None
    return (1.0 if winner == sides.name else 0.0), metric.reason


def _redacted(calls: list[JudgeCall] | None, secrets: list[str]) -> list[JudgeCall] | None:
    """The calls, their errors redacted as the evaluation's is (they are exported)."""
    if calls is None:
        return None
    return [
        call.model_copy(update={"error": redact(call.error, secrets)}) if call.error else call
        for call in calls
    ]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
