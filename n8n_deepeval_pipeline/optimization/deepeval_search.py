"""DeepEval's own ``PromptOptimizer``, run in the optimiser's process (the only one to import it).

Nothing of the optimiser is re-implemented: DeepEval's algorithm (GEPA, MIPROv2, COPRO or
SIMBA), its scorer, its rewriter and its templates run as they are. The pipeline supplies
what DeepEval takes as arguments:

- the model callback: each answer is asked of the calling process (``AnswerCall``), which
  decides what an answer is (a workflow's harness copy run with the candidate text);
- the metrics: one stand-in per objective, a ``BaseMetric`` whose score, reason and
  success come from the calling process (``ScoreCall``); DeepEval shows each beside its
  class name, so a stand-in carries the name of the DeepEval metric it stands for;
- the optimiser model: the pipeline's judge (``PipelineJudge``: cache, pacing, retries),
  which checks the budget before every call and counts what it spends.

DeepEval's randomness is seeded: the algorithm's own generator, and the ids it gives
candidates (``uuid4`` in its modules), which order its Pareto bookkeeping; so a search
with the same seed, the same answers and the same judge's answers proposes the same
candidates, and a search resumed after a kill replays the journaled part for nothing.

A budget spent or a caller that failed ends the search with what it found so far: the
best of the candidates DeepEval kept, by their mean score.
"""

from __future__ import annotations

import contextvars
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, Protocol, cast

from deepeval.dataset.golden import Golden as DeepEvalGolden
from deepeval.evaluate.configs import AsyncConfig
from deepeval.metrics import BaseMetric
from deepeval.optimizer import PromptOptimizer
from deepeval.optimizer.algorithms import COPRO, GEPA, MIPROV2, SIMBA
from deepeval.optimizer.configs import DisplayConfig
from deepeval.optimizer.policies import TieBreaker
from deepeval.optimizer.types import RunnerStatusType
from deepeval.prompt.prompt import Prompt
from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.judge import JUDGE_SCOPE, JudgeScope, PipelineJudge, UsageCounter
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.optimization.request import (
    AnswerReply,
    Candidate,
    Objective,
    OptimizationOutcome,
    OptimizationRequest,
    Round,
    ScoreReply,
    StopReason,
)
from n8n_deepeval_pipeline.optimization.spend import BudgetReached, Spend, SpendLedger

# DeepEval's optimiser modules that draw candidate ids from ``uuid.uuid4``.
_ID_MODULES = (
    "deepeval.optimizer.types",
    "deepeval.optimizer.algorithms.gepa.gepa",
    "deepeval.optimizer.algorithms.miprov2.miprov2",
    "deepeval.optimizer.algorithms.miprov2.bootstrapper",
    "deepeval.optimizer.algorithms.copro.copro",
    "deepeval.optimizer.algorithms.simba.simba",
)
# The answer a stand-in metric scores: set by the model callback in the task that then
# measures the metrics (DeepEval generates, then measures, in one coroutine per golden).
ANSWER: contextvars.ContextVar[str | None] = contextvars.ContextVar("answer", default=None)


class SearchStopped(BaseException):
    """The search must end (a budget, a caller that failed).

    A ``BaseException``: DeepEval's algorithms catch ``Exception`` around some proposals
    and demonstrations and go on; this must reach the top.
    """

    def __init__(self, reason: StopReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: StopReason = reason
        self.detail = detail


class Caller(Protocol):
    """The connection to the calling process, as the search uses it."""

    async def answer(self, candidate: str, golden_id: str, spend: Spend) -> AnswerReply: ...

    async def score(self, answer_id: str, objective: str, spend: Spend) -> ScoreReply: ...

    def round(self, report: Round) -> None: ...


def seeded_ids(seed: int) -> None:
    """Make the candidate ids DeepEval's optimiser draws a sequence fixed by ``seed``."""
    import importlib

    generator = random.Random(f"candidate-ids:{seed}")

    def uuid4() -> uuid.UUID:
        return uuid.UUID(int=generator.getrandbits(128), version=4)

    ids = SimpleNamespace(uuid4=uuid4, UUID=uuid.UUID)
    for name in _ID_MODULES:
        importlib.import_module(name).uuid = ids  # type: ignore[attr-defined]


class OptimizerModel(PipelineJudge):
    """The pipeline's judge as DeepEval's optimiser model: budgeted, counted, async only."""

    def __init__(
        self, spec: JudgeSpec, usage: UsageCounter, ledger: SpendLedger, prices: PriceTable
    ) -> None:
        self.ledger = ledger
        self.prices = prices
        super().__init__(spec, usage)

    def spend(self) -> Spend:
        """What this model's calls cost so far (cache hits are free)."""
        usage = self.usage
        cost = self.prices.cost(self.spec.model, usage.prompt_tokens, usage.completion_tokens)
        unpriced = (self.spec.label,) if cost is None and usage.calls else ()
        return Spend(
            judge_calls=usage.calls,
            cached_judge_calls=usage.cached,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=cost or 0.0,
            unpriced_models=unpriced,
        )

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        raise NotImplementedError("the optimiser runs in DeepEval's async mode")

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        try:
            self.ledger.admit("judge")
        except BudgetReached as spent:
            raise SearchStopped("budget", str(spent)) from None
        try:
            return await super().a_generate(prompt, schema)
        finally:
            self.ledger.restate(self.spend())


class _Objective(BaseMetric):
    """A stand-in for one objective: its score comes from the calling process."""

    objective = ""
    measure_remotely: Callable[[str, str], Awaitable[ScoreReply]]

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.async_mode = True
        self.include_reason = True

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        raise NotImplementedError("the optimiser runs in DeepEval's async mode")

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        answer_id = ANSWER.get()
        if answer_id is None:
            raise SearchStopped("failed", "a metric was measured before any answer was given")
        reply = await type(self).measure_remotely(answer_id, self.objective)
        if reply.stop is not None:
            raise SearchStopped("budget", reply.stop)
        if reply.scored is None:
            raise SearchStopped("failed", reply.error or "the caller gave no score")
        self.score = reply.scored.score
        self.reason = reply.scored.reason
        self.success = reply.scored.success
        return self.score

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return self.objective


def objective_classes(
    objectives: list[Objective], measure: Callable[[str, str], Awaitable[ScoreReply]]
) -> list[type[_Objective]]:
    """A stand-in class per objective, named as DeepEval will show it (and kept apart).

    DeepEval's scorer averages its metrics' scores by class name: two objectives of one
    DeepEval class (two G-Evals) are told apart by their labels.
    """
    names = [objective.name for objective in objectives]
    classes = []
    for objective in objectives:
        name = objective.name
        if names.count(name) > 1:
            name = f"{name} ({objective.label})"
        attributes = {"objective": objective.label, "measure_remotely": staticmethod(measure)}
        classes.append(type(name, (_Objective,), attributes))
    return classes


def algorithm_for(request: OptimizationRequest) -> GEPA | MIPROV2 | COPRO | SIMBA:
    """DeepEval's algorithm with the request's options and seed."""
    options = dict(request.options)
    if request.algorithm == "gepa":
        if "tie_breaker" in options:
            options["tie_breaker"] = TieBreaker(options["tie_breaker"])
        return GEPA(random_seed=request.seed, **options)
    if request.algorithm == "miprov2":
        return MIPROV2(random_state=request.seed, **options)
    if request.algorithm == "copro":
        return COPRO(random_state=request.seed, **options)
    return SIMBA(random_state=request.seed, **options)


class DeepEvalSearch:
    """One request searched by DeepEval's ``PromptOptimizer``, answered by the caller."""

    def __init__(self, request: OptimizationRequest, caller: Caller) -> None:
        self.request = request
        self.caller = caller
        self.ledger = SpendLedger(request.budget)
        self.tried: dict[str, str] = {}  # candidate text → the first answer's golden (in order)
        self.rounds: list[Round] = []
        self._begun = 0  # the round DeepEval last said it began (all but GEPA)
        self.validation_scores: dict[str, list[float]] = {}  # by candidate id, as scored
        self._started = time.perf_counter()

    async def answer(self, prompt: Prompt, golden: DeepEvalGolden) -> str:
        """DeepEval's model callback: the caller's answer of the candidate on the golden."""
        candidate = prompt.text_template or ""
        self.tried.setdefault(candidate, str(golden.name))
        reply = await self.caller.answer(candidate, str(golden.name), self.ledger.own)
        self.ledger.told(reply.spend)
        if reply.stop is not None:
            raise SearchStopped("budget", reply.stop)
        if reply.answer_id is None:
            raise SearchStopped("failed", reply.error or "the caller gave no answer")
        ANSWER.set(reply.answer_id)
        return reply.output

    async def _measure(self, answer_id: str, objective: str) -> ScoreReply:
        reply = await self.caller.score(answer_id, objective, self.ledger.own)
        self.ledger.told(reply.spend)
        return reply

    async def run(self) -> OptimizationOutcome:
        """The search, to its end or to what stopped it."""
        request = self.request
        usage = UsageCounter()
        JUDGE_SCOPE.set(JudgeScope(usage, request.cache_namespace))
        model = OptimizerModel(request.model, usage, self.ledger, PriceTable())
        seeded_ids(request.seed)
        self.algorithm = algorithm_for(request)
        metrics = [
            cls(threshold=objective.threshold)
            for cls, objective in zip(
                objective_classes(request.objectives, self._measure),
                request.objectives,
                strict=True,
            )
        ]
        optimizer = PromptOptimizer(
            # Annotated as returning str; DeepEval awaits a callback that returns a coroutine.
            model_callback=cast(Any, self.answer),
            metrics=cast(list[BaseMetric], metrics),
            optimizer_model=model,
            algorithm=self.algorithm,
            async_config=AsyncConfig(run_async=True, max_concurrent=request.concurrency),
            display_config=DisplayConfig(show_indicator=False),
        )
        self.algorithm.status_callback = self._status  # instead of DeepEval's progress bar
        self._observe_validation_scores()
        goldens = [
            DeepEvalGolden(
                input=golden.input,
                expected_output=golden.expected_output,
                context=golden.context,
                retrieval_context=golden.retrieval_context,
                name=golden.id,
            )
            for golden in request.goldens
        ]
        stop: StopReason = "finished"
        detail = None
        best: str | None = None
        try:
            found = await optimizer.a_optimize(Prompt(text_template=request.text), goldens)
            best = found.text_template
        except SearchStopped as stopped:
            stop, detail = stopped.reason, stopped.detail
        self._last_round()
        return self._outcome(best, stop, detail)

    def _observe_validation_scores(self) -> None:
        """Keep every candidate's validation scores as DeepEval's scorer returns them.

        Its Pareto table drops a candidate once another dominates it (the workflow's own
        prompt, often): its scores are still what the report compares.
        """
        scorer = self.algorithm.scorer
        scored = scorer.a_score_pareto

        async def a_score_pareto(configuration: Any, goldens: Any) -> list[float]:
            scores: list[float] = await scored(configuration, goldens)
            self.validation_scores[configuration.id] = list(scores)
            return scores

        setattr(scorer, "a_score_pareto", a_score_pareto)  # noqa: B010 (an instance attribute)

    # ---- rounds ----------------------------------------------------------------------------

    def _total(self) -> int:
        algorithm = self.algorithm
        for name in ("iterations", "num_trials", "depth"):
            if hasattr(algorithm, name):
                return int(getattr(algorithm, name))
        return 0

    def _status(
        self,
        kind: RunnerStatusType,
        detail: str = "",
        step_index: int | None = None,
        total_steps: int | None = None,
    ) -> None:
        """DeepEval's progress: GEPA says a round ended; the others that the next began."""
        if kind is not RunnerStatusType.PROGRESS or step_index is None:
            return
        if isinstance(self.algorithm, GEPA):
            self._round(step_index)
        else:
            self._begun = step_index
            self._round(step_index - 1)

    def _last_round(self) -> None:
        """The round under way when the search ended (cut short, or its last)."""
        begun = self.algorithm._current_iteration if isinstance(self.algorithm, GEPA) else None
        self._round(begun if begun is not None else self._begun)

    def _round(self, number: int) -> None:
        if number < 1 or number <= len(self.rounds):
            return
        report = Round(
            number=number,
            total=self._total(),
            best_score=self._best_score(),
            candidates=len(self.tried),
            spend=self.ledger.total,
        )
        self.rounds.append(report)
        self.caller.round(report)

    # ---- what was found --------------------------------------------------------------------

    def _table(self) -> dict[str, list[float]]:
        return dict(getattr(self.algorithm, "pareto_score_table", {}) or {})

    def _best_score(self) -> float | None:
        means = [sum(scores) / len(scores) for scores in self._table().values() if scores]
        return max(means) if means else None

    def _texts(self) -> dict[str, str]:
        configurations = getattr(self.algorithm, "prompt_configurations_by_id", {}) or {}
        return {
            config_id: config.prompts[next(iter(config.prompts))].text_template or ""
            for config_id, config in configurations.items()
        }

    def _best_so_far(self) -> str | None:
        """The id of the kept candidate with the best mean (DeepEval's own choice for GEPA)."""
        table = self._table()
        if not table:
            return None
        if isinstance(self.algorithm, GEPA):
            return str(self.algorithm._best_by_aggregate().id)
        return max(table, key=lambda key: sum(table[key]) / len(table[key]) if table[key] else 0)

    def _outcome(
        self, best: str | None, stop: StopReason, detail: str | None
    ) -> OptimizationOutcome:
        texts, table = self._texts(), self._table()
        parents: dict[str, str | None] = dict(getattr(self.algorithm, "parents_by_id", {}) or {})
        scored = {**self.validation_scores, **table}
        kept = [
            Candidate(
                id=key,
                text=text,
                parent=parents.get(key),
                scores=list(scored.get(key, [])),
                kept=key in table,
            )
            for key, text in texts.items()
        ]
        best_id = None
        if best is None:
            best_id = self._best_so_far()
            best = texts.get(best_id, self.request.text) if best_id else self.request.text
        else:
            best_id = next((key for key, text in texts.items() if text == best), None)
        base = next(
            (c for c in kept if c.text == self.request.text and c.scores),
            None,
        )
        chosen = next((c for c in kept if c.id == best_id), None)
        return OptimizationOutcome(
            base_text=self.request.text,
            best_text=best,
            best_id=best_id,
            base_score=base.mean if base else None,
            best_score=chosen.mean if chosen else None,
            candidates=kept + self._only_tried(texts),
            tried=list(self.tried),
            rounds=self.rounds,
            stop=stop,
            stop_detail=detail,
            spend=self.ledger.total,
            model_spend=self.ledger.own,
            seconds=time.perf_counter() - self._started,
        )

    def _only_tried(self, kept: dict[str, str]) -> list[Candidate]:
        """Candidates answered but not kept by DeepEval (a rejected mutation), in order."""
        known = set(kept.values())
        rejected = [text for text in self.tried if text not in known]
        return [
            Candidate(id=f"tried-{number}", text=text)
            for number, text in enumerate(rejected, start=1)
        ]
