"""A workflow's prompt searched on the benchmark's training rows: the held-out rows never seen.

The rows are split at random, by the seed, into training rows (the goldens DeepEval's
optimiser answers and scores) and held-out rows (kept for the proof, ``summary.held_out``).
The objectives are the benchmark's metrics the ``optimize`` section names (default: those
that decide a run), each handed to DeepEval under its DeepEval class name; answers come
from the workflow's harness copies (``workflow_answers``), scores from the worker pool
(``pool_scoring``); the optimiser model is the benchmark's judge unless ``optimize.model``
names another.

A search has a folder of its own under ``$N8N_DEEPEVAL_HOME/optimize/<benchmark>/``, named
by a digest of everything that decides it (the workflow version, the prompt, the rows,
the metrics, the algorithm, its options and seed, the model): the same search started
again finds its answers and scores there and pays again only for what it had not done.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.optimization.launcher import optimize
from n8n_deepeval_pipeline.optimization.pool_scoring import (
    PoolBatches,
    PoolScorer,
    ScoringServices,
)
from n8n_deepeval_pipeline.optimization.request import (
    Golden,
    Objective,
    OptimizationOutcome,
    OptimizationRequest,
    Round,
)
from n8n_deepeval_pipeline.optimization.spend import Budget, SpendLedger
from n8n_deepeval_pipeline.optimization.workflow_answers import (
    AnswerJournal,
    CandidateCopies,
    WorkflowAnswerer,
    digest,
)
from n8n_deepeval_pipeline.statistics.held_out_draw import SplitError, held_out_ids
from n8n_deepeval_pipeline.statistics.pass_direction import effective_threshold
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.workflow.agent_tools import agent_tools
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.prompt_parameter import PromptParameter

# How long a search's harness copies may live before another host may remove them.
COPY_TIME_LIMIT_S = 12 * 3600.0


@dataclass(frozen=True)
class Split:
    """The training rows the search scores on and the held-out rows of the proof."""

    training: list[DatasetRow]
    held_out: list[DatasetRow]


def split_rows(rows: list[DatasetRow], held_out: float, seed: int) -> Split:
    """Rows drawn at random by ``seed``: at least one held out, at least two to search on.

    The draw depends on the row ids alone (sorted), not on the dataset's order.
    """
    try:
        chosen = held_out_ids((row.row_id for row in rows), held_out, seed)
    except SplitError as error:
        raise SplitError(f"the dataset has {error}") from None
    return Split(
        training=[row for row in rows if row.row_id not in chosen],
        held_out=[row for row in rows if row.row_id in chosen],
    )


def class_name(config: MetricConfig) -> str:
    """The class name DeepEval shows beside a metric's score (its own class, or ours)."""
    entry = entry_for(config)
    if entry.implementation is not None:
        return entry.implementation.rsplit(".", 1)[-1]
    return "".join(part.capitalize() for part in config.metric.split("_")) + "Metric"


def objectives(benchmark: Benchmark) -> list[Objective]:
    """The metrics a candidate is scored on, as DeepEval is told of them (higher is better)."""
    found = []
    for config in benchmark.metrics:
        if config.result_label() not in benchmark.optimized_labels:
            continue
        entry = entry_for(config)
        threshold = effective_threshold(config.threshold, config.strict_mode, entry.direction)
        if entry.direction != "higher_is_better":
            threshold = 1 - threshold  # the optimiser sees 1 − score: higher is better
        found.append(Objective(label=config.result_label(), name=class_name(config),
                               threshold=threshold))  # fmt: skip
    return found


def goldens(rows: list[DatasetRow]) -> list[Golden]:
    """The training rows as DeepEval's goldens, named by row id."""
    return [
        Golden(
            id=row.row_id,
            input=row.input or "",
            expected_output=row.expected_output,
            context=row.context,
            retrieval_context=row.retrieval_context,
        )
        for row in rows
    ]


@dataclass(frozen=True)
class SearchPlan:
    """What a search of one benchmark's prompt needs, decided before it starts."""

    benchmark: Benchmark
    workflow: dict[str, Any]
    parameter: PromptParameter
    split: Split
    model: Any  # the optimiser model's JudgeSpec

    def request(self) -> OptimizationRequest:
        """DeepEval's search, as the optimiser's process is asked for it."""
        config = self.benchmark.optimize
        assert config is not None  # filled with the defaults by the command
        budget = config.budget
        return OptimizationRequest(
            text=self.parameter.text,
            goldens=goldens(self.split.training),
            objectives=objectives(self.benchmark),
            model=self.model,
            algorithm=config.algorithm,
            options=config.options.model_dump(),
            seed=config.split.seed,
            concurrency=config.concurrency,
            budget=Budget(
                answer_calls=budget.workflow_calls,
                judge_calls=budget.judge_calls,
                cost_usd=budget.cost_usd,
            ),
        )

    def key(self) -> str:
        """A digest of everything that decides the search: its folder's name."""
        request = self.request()
        identity = {
            "workflow": workflow_hash(self.workflow),
            "node": self.parameter.node,
            "path": self.parameter.path,
            "request": request.model_dump(mode="json", exclude={"model", "budget"}),
            "model": request.model.label,
            "metrics": [
                config.model_dump(mode="json")
                for config in self.benchmark.metrics
                if config.result_label() in self.benchmark.optimized_labels
            ],
            "judge": self.benchmark.judge.model_dump(mode="json") if self.benchmark.judge else None,
        }
        return digest(json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str))


@dataclass(frozen=True)
class SearchServices:
    """What the search calls on: n8n, and what scores its answers."""

    client: Callable[[], N8nClient]
    base_url: str
    scoring: ScoringServices


def search(
    plan: SearchPlan,
    services: SearchServices,
    folder: Path,
    on_round: Callable[[Round], None] | None = None,
    on_stale: Callable[[str], None] | None = None,
) -> OptimizationOutcome:
    """DeepEval's search of the prompt on the training rows, answered by the workflow."""
    benchmark = plan.benchmark
    target = benchmark.target
    assert isinstance(target, WorkflowTarget)  # checked when the benchmark was validated
    request = plan.request()
    ledger = SpendLedger(request.budget)
    scoring = services.scoring
    copies = CandidateCopies(
        services.client,
        services.base_url,
        plan.workflow,
        target,
        plan.parameter,
        benchmark.name,
        COPY_TIME_LIMIT_S,
    )
    for name in copies.remove_stale():
        if on_stale is not None:
            on_stale(name)
    answerer = WorkflowAnswerer(
        copies,
        plan.split.training,
        AnswerJournal(folder / "answers.jsonl"),
        ledger,
        benchmark.run_name or benchmark.name,
    )
    scorer = PoolScorer(
        benchmark,
        answerer.answered,
        scoring.judge,
        scoring.prices,
        PoolBatches(scoring.pool),
        scoring.score_journal(folder / "scores.jsonl"),
        ledger,
        scoring.evaluation_timeout_s,
        agent_tools(plan.workflow),
    )
    try:
        return optimize(request, answerer, scorer, ledger, on_round)
    finally:
        copies.close()
