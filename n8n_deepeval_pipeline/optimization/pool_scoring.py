"""A candidate's answers scored as any run is: the benchmark's metrics, its judge, the worker pool.

An answer becomes one run of the metrics' evaluation plan (``tables.evaluation_plan``: the
same tasks, judge per metric, pass direction and cost a benchmark run has) and is
evaluated in the pool's workers, which alone import DeepEval: the optimiser's process never
builds a judge of its own for the metrics. The first objective asked of an answer scores
every objective of it at once (DeepEval measures them one after the other); the others
are then read from what it found.

The pool evaluates one batch at a time: calls that arrive while a batch runs wait for the
next, which takes all of them. Each result is journaled as it arrives (the score journal a
benchmark's scoring uses, in the search's folder), so a search started again after a kill
pays nothing for the scores it had. A score is normalised to "higher is better" (a
lower-is-better metric, such as toxicity, counts as 1 − score), as the optimiser maximises.
A run whose workflow call failed scores 0 (the candidate failed the row); a metric the
judge could not score ends the search (what it found so far is kept).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask, is_unjudged
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeResolver, JudgeSpec
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.optimization.launcher import CallFailed
from n8n_deepeval_pipeline.optimization.request import Scored
from n8n_deepeval_pipeline.optimization.spend import Spend, SpendLedger
from n8n_deepeval_pipeline.optimization.workflow_answers import Answered
from n8n_deepeval_pipeline.statistics.pass_direction import normalised
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan
from n8n_deepeval_pipeline.tables.rows import MetricScore


class Evaluator(Protocol):
    """What evaluates tasks: the worker pool (``WorkerPool.evaluate``)."""

    def evaluate(self, tasks: Iterable[EvaluationTask]) -> Iterable[EvaluationResult]: ...


class Journal(Protocol):
    """Where finished evaluations are kept (``orchestration``'s score journal)."""

    def completed(self) -> dict[str, EvaluationResult]: ...

    def record(self, task: EvaluationTask, result: EvaluationResult, run_id: str = "") -> None: ...


@dataclass(frozen=True)
class ScoringServices:
    """What scores a search's answers: the metrics' judges and prices, the pool, a journal."""

    judge: JudgeSpec | JudgeResolver
    prices: PriceTable
    pool: Evaluator
    score_journal: Callable[[Path], Journal]
    evaluation_timeout_s: float


class PoolBatches:
    """The pool's one caller: tasks from many threads evaluated in batches, one at a time."""

    def __init__(self, pool: Evaluator) -> None:
        self.pool = pool
        self._pending: queue.Queue[tuple[list[EvaluationTask], Future[list[EvaluationResult]]]]
        self._pending = queue.Queue()
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._serve, name="pool-batches", daemon=True)
        self._thread.start()

    def evaluate(self, tasks: list[EvaluationTask]) -> list[EvaluationResult]:
        """The results of ``tasks``, in their order (waits for its batch)."""
        done: Future[list[EvaluationResult]] = Future()
        self._pending.put((tasks, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            waiting = [self._pending.get()]
            while not self._pending.empty():
                waiting.append(self._pending.get_nowait())
            numbered: dict[int, tuple[int, int]] = {}  # pool id → (caller, position)
            sent: list[EvaluationTask] = []
            for caller, (tasks, _) in enumerate(waiting):
                for position, task in enumerate(tasks):
                    pool_id = next(self._ids)
                    numbered[pool_id] = (caller, position)
                    sent.append(task.model_copy(update={"task_id": pool_id}))
            results: list[dict[int, EvaluationResult]] = [{} for _ in waiting]
            try:
                for result in self.pool.evaluate(sent):
                    caller, position = numbered[result.task_id]
                    original = waiting[caller][0][position].task_id
                    results[caller][position] = result.model_copy(update={"task_id": original})
            except Exception as error:
                for _, done in waiting:
                    done.set_exception(error)
                continue
            for (tasks, done), found in zip(waiting, results, strict=True):
                done.set_result([found[position] for position in range(len(tasks))])


class PoolEvaluations:
    """An evaluation plan's tasks run in the pool; each result journaled, the journaled replayed.

    What is replayed costs nothing; what is evaluated is checked against the budget first
    (``ledger.admit``) and counted after.
    """

    def __init__(self, pool: PoolBatches, journal: Journal, ledger: SpendLedger) -> None:
        self.pool = pool
        self.journal = journal
        self.kept = journal.completed()
        self.ledger = ledger

    def rows(self, plan: EvaluationPlan) -> list[MetricScore]:
        """The plan's score rows: replayed from the journal, else evaluated and journaled."""
        rows, to_run = plan.resume(self.kept)
        replayed = len(rows)
        rows += plan.rows_without_output()
        if to_run:
            self.ledger.admit("judge")
            for task, result in zip(to_run, self.pool.evaluate(to_run), strict=True):
                self.journal.record(task, result)
                if not is_unjudged(result.error_kind):
                    self.kept[task.fingerprint()] = result
                rows.append(plan.row_for(result))
        self.ledger.add(_spent(rows[replayed:], replayed))
        return rows


class PoolScorer:
    """Objectives of answers, scored by the benchmark's metrics in the worker pool."""

    def __init__(
        self,
        benchmark: Benchmark,
        answers: dict[str, Answered],
        judge: JudgeSpec | JudgeResolver,
        prices: PriceTable,
        pool: PoolBatches,
        journal: Journal,
        ledger: SpendLedger,
        timeout_s: float,
        tools: list[AgentTool] | None = None,
    ) -> None:
        labels = benchmark.optimized_labels
        metrics = [metric for metric in benchmark.metrics if metric.result_label() in labels]
        self.benchmark = benchmark.model_copy(update={"metrics": metrics})
        self.answers = answers
        self.judge = judge
        self.prices = prices
        self.evaluations = PoolEvaluations(pool, journal, ledger)
        self.timeout_s = timeout_s
        self.tools = tools
        self._scored: dict[str, dict[str, Scored]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def score(self, answer_id: str, objective: str) -> Scored:
        """One objective of an answer (every objective of it is scored on the first ask)."""
        with self._lock:
            lock = self._locks.setdefault(answer_id, threading.Lock())
        with lock:
            if answer_id not in self._scored:
                self._scored[answer_id] = self._score_all(self.answers[answer_id])
        return self._scored[answer_id][objective]

    def _score_all(self, answered: Answered) -> dict[str, Scored]:
        plan = EvaluationPlan(
            self.benchmark,
            [answered.run],
            [answered.row],
            [answered.output],
            self.judge,
            self.timeout_s,
            self.prices,
            tools=self.tools,
        )
        return {row.metric: _scored(row) for row in self.evaluations.rows(plan)}


def _spent(rows: list[MetricScore], replayed: int) -> Spend:
    unpriced = tuple(
        str(row.judge) for row in rows if row.cost_usd is None and row.judge and row.judge_calls
    )
    return Spend(
        judge_calls=sum(row.judge_calls for row in rows),
        cached_judge_calls=sum(row.cached_calls for row in rows),
        replayed_scores=replayed,
        prompt_tokens=sum(row.prompt_tokens for row in rows),
        completion_tokens=sum(row.completion_tokens for row in rows),
        cost_usd=sum(row.cost_usd or 0.0 for row in rows),
        unpriced_models=unpriced,
    )


def _scored(row: MetricScore) -> Scored:
    """The optimiser's view of a score row: higher is better; a failed workflow call is 0."""
    if row.error_kind is not None and is_unjudged(row.error_kind):
        raise CallFailed(f"metric {row.metric}: {row.error_kind}: {row.error}")
    score = normalised(row.score, row.direction) if row.error_kind is None else 0.0
    reason: Any = row.reason if row.error_kind is None else f"{row.error_kind}: {row.error}"
    return Scored(score=score or 0.0, success=bool(row.success), reason=reason)
