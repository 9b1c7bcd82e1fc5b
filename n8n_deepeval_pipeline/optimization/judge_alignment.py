"""A judge metric's text searched so that its verdicts agree with people's labels.

The text under optimisation is the metric's own (``calibration.judge_text``: G-Eval's
criteria or steps, a DAG's node texts); DeepEval's ``PromptOptimizer`` rewrites it as it
rewrites any prompt (``optimization.launcher``). What it is scored on is set out in
``calibration.alignment_goldens``: each labelled training run is an example, the answer of
a text on it is the judge's verdict with the metric made from that text, and the score of
that answer is 1 when people said the same, else 0.

A verdict is scored as any score is: the metric (the candidate's text, everything else as
configured) on the run's stored input and output, through an evaluation plan, the
benchmark's judge and the worker pool. Each result is journaled (``scores.jsonl`` in the
search's folder), so a search started again after a kill pays nothing for what it had
scored, and the judge's cache answers what it had asked. The held-out runs are judged the
same way, with the metric's own text and with the best one; that is outside the search's
budget, and counted apart.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from n8n_deepeval_pipeline.benchmark.calibration import AlignConfig
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.alignment_goldens import (
    OBJECTIVE_LABEL,
    OBJECTIVE_NAME,
    Verdict,
    agreement,
    people_text,
    run_text,
)
from n8n_deepeval_pipeline.calibration.alignment_split import AlignmentSplit, LabelledRun
from n8n_deepeval_pipeline.calibration.judge_text import CandidateTextError, JudgeText, with_text
from n8n_deepeval_pipeline.evaluation import EvaluationItem, is_unjudged
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.optimization.launcher import CallFailed, optimize
from n8n_deepeval_pipeline.optimization.pool_scoring import (
    PoolBatches,
    PoolEvaluations,
    ScoringServices,
)
from n8n_deepeval_pipeline.optimization.request import (
    Golden,
    Objective,
    OptimizationOutcome,
    OptimizationRequest,
    Round,
    Scored,
)
from n8n_deepeval_pipeline.optimization.spend import Budget, Spend, SpendLedger
from n8n_deepeval_pipeline.optimization.workflow_answers import digest
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan, evaluation_item
from n8n_deepeval_pipeline.tables.output_images import image_data
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    OutputImage,
)


@dataclass(frozen=True)
class StoredVersion:
    """One version's stored runs, rows, outputs, agent tools and images."""

    runs: list[ExpandedRun]
    rows: list[DatasetRow]
    outputs: list[AgentOutput]
    tools: list[AgentTool] | None
    images: list[OutputImage]

    def item(self, run_id: str) -> EvaluationItem:
        """What a metric reads about one run, as a benchmark run builds it."""
        run = next(run for run in self.runs if run.run_id == run_id)
        row = next(row for row in self.rows if row.row_id == run.row_id)
        output = next(output for output in self.outputs if output.run_id == run_id)
        images = {image.sha256: image_data(image) for image in self.images}
        return evaluation_item(row, output, self.tools, images)


@dataclass(frozen=True)
class AlignmentPlan:
    """What a search of one metric's text needs, decided before it starts."""

    benchmark: Benchmark
    config: MetricConfig  # the metric as the file configures it
    text: JudgeText
    split: AlignmentSplit
    stored: dict[str, StoredVersion]  # by workflow hash
    model: JudgeSpec  # the optimiser model

    @property
    def settings(self) -> AlignConfig:
        """The calibration section's align settings (its defaults without one)."""
        calibration = self.benchmark.calibration
        return calibration.align if calibration is not None else AlignConfig()

    def goldens(self) -> list[Golden]:
        """The training runs people agree on, as DeepEval's goldens named by run id."""
        fields = entry_for(self.config).fields_needed(self.config)
        return [
            Golden(
                id=run.run_id,
                input=run_text(self.stored[run.workflow_hash].item(run.run_id), fields),
                expected_output=people_text(run.verdicts),
            )
            for run in self.split.examples
        ]

    def request(self) -> OptimizationRequest:
        """DeepEval's search, as the optimiser's process is asked for it."""
        settings = self.settings
        return OptimizationRequest(
            text=self.text.text,
            goldens=self.goldens(),
            objectives=[Objective(label=OBJECTIVE_LABEL, name=OBJECTIVE_NAME, threshold=0.5)],
            model=self.model,
            algorithm=settings.algorithm,
            options=settings.options.model_dump(),
            seed=settings.split.seed,
            concurrency=settings.concurrency,
            budget=Budget(
                judge_calls=settings.budget.judge_calls, cost_usd=settings.budget.cost_usd
            ),
            cache_namespace="align",
        )

    def key(self) -> str:
        """A digest of everything that decides the search: its folder's name."""
        request = self.request()
        identity = {
            "metric": self.config.model_dump(mode="json"),
            "labels": [run.model_dump(mode="json") for run in self.split.training],
            "held_out": [run.run_id for run in self.split.held_out],
            "request": request.model_dump(mode="json", exclude={"model", "budget"}),
            "model": request.model.label,
            "judge": self.benchmark.judge.model_dump(mode="json") if self.benchmark.judge else None,
        }
        return digest(json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str))


def verdict_of(row: MetricScore) -> Verdict:
    """A score row as a verdict; a judge that failed ends the search (``CallFailed``)."""
    if row.error_kind is not None:
        if is_unjudged(row.error_kind):
            raise CallFailed(f"metric {row.metric}: {row.error_kind}: {row.error}")
        return Verdict(passed=None, reason=f"{row.error_kind}: {row.error}")
    return Verdict(passed=bool(row.success), score=row.score, reason=row.reason)


class MetricVerdicts:
    """The judge's verdicts on labelled runs with a text of the metric, from the pool."""

    def __init__(
        self, plan: AlignmentPlan, services: ScoringServices, evaluations: PoolEvaluations
    ) -> None:
        self.plan = plan
        self.services = services
        self.evaluations = evaluations

    def verdicts(self, text: str, runs: Iterable[LabelledRun]) -> dict[str, Verdict]:
        """Each run's verdict with the metric made from ``text`` (one plan per version)."""
        try:
            config = with_text(self.plan.config, text)
        except CandidateTextError as error:
            return {run.run_id: Verdict(passed=None, reason=f"not a metric: {error}")
                    for run in runs}  # fmt: skip
        benchmark = self.plan.benchmark.model_copy(update={"metrics": [config]})
        by_version: dict[str, set[str]] = defaultdict(set)
        for run in runs:
            by_version[run.workflow_hash].add(run.run_id)
        found: dict[str, Verdict] = {}
        for version, run_ids in by_version.items():
            stored = self.plan.stored[version]
            evaluation = EvaluationPlan(
                benchmark,
                [run for run in stored.runs if run.run_id in run_ids],
                stored.rows,
                stored.outputs,
                self.services.judge,
                self.services.evaluation_timeout_s,
                self.services.prices,
                tools=stored.tools,
                images=stored.images,
            )
            found.update((row.run_id, verdict_of(row)) for row in self.evaluations.rows(evaluation))
        return found


class VerdictAnswerer:
    """DeepEval's model callback here: a candidate text's verdict on a training run."""

    def __init__(self, verdicts: MetricVerdicts, examples: Sequence[LabelledRun]) -> None:
        self.verdicts = verdicts
        self.examples = {run.run_id: run for run in examples}
        self.answered: dict[str, tuple[bool, Verdict]] = {}  # answer id → (people, verdict)
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._lock = threading.Lock()

    def answer(self, candidate: str, golden_id: str) -> tuple[str, str]:
        """(answer id, the verdict as text) of ``candidate`` on the run ``golden_id``."""
        run = self.examples.get(golden_id)
        if run is None or run.people is None:
            raise CallFailed(f"no labelled training run {golden_id!r}")
        key = f"{digest(candidate)}:{golden_id}"
        with self._lock:
            lock = self._locks[key]
        with lock:  # the same text on the same run, asked twice at once, is judged once
            if key not in self.answered:
                (verdict,) = self.verdicts.verdicts(candidate, [run]).values()
                self.answered[key] = (run.people, verdict)
        return key, self.answered[key][1].text()


class AgreementScorer:
    """The objective of an answer: whether its verdict is the people's."""

    def __init__(self, answerer: VerdictAnswerer) -> None:
        self.answerer = answerer

    def score(self, answer_id: str, objective: str) -> Scored:
        """1 when the verdict agrees with people, else 0, and which way it erred."""
        people, verdict = self.answerer.answered[answer_id]
        agreed = agreement(people, verdict)
        return Scored(score=agreed.score, success=agreed.agrees, reason=agreed.reason)


def search(
    plan: AlignmentPlan,
    services: ScoringServices,
    folder: Path,
    on_round: Callable[[Round], None] | None = None,
) -> OptimizationOutcome:
    """DeepEval's search of the metric's text on the training runs, judged in the pool."""
    request = plan.request()
    ledger = SpendLedger(request.budget)
    evaluations = PoolEvaluations(
        PoolBatches(services.pool), services.score_journal(folder / "scores.jsonl"), ledger
    )
    answerer = VerdictAnswerer(MetricVerdicts(plan, services, evaluations), plan.split.examples)
    return optimize(request, answerer, AgreementScorer(answerer), ledger, on_round)


def held_out_verdicts(
    plan: AlignmentPlan, services: ScoringServices, folder: Path, texts: Sequence[str]
) -> tuple[list[dict[str, Verdict]], Spend]:
    """Each text's verdicts on the held-out runs (journaled, unbudgeted), and their spend."""
    ledger = SpendLedger(Budget())
    evaluations = PoolEvaluations(
        PoolBatches(services.pool), services.score_journal(folder / "held_out.jsonl"), ledger
    )
    verdicts = MetricVerdicts(plan, services, evaluations)
    found = [verdicts.verdicts(text, plan.split.held_out) for text in dict.fromkeys(texts)]
    by_text = dict(zip(dict.fromkeys(texts), found, strict=True))
    return [by_text[text] for text in texts], ledger.total
