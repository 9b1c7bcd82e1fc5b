"""What crosses between the calling process and the optimiser's process.

The caller asks for one search: a text to start from, the goldens to score candidates on,
the objectives (scored by the caller: DeepEval is handed stand-ins whose scores come
back over the connection), the model that diagnoses and rewrites, the algorithm and its
options, the budget. While it searches, the optimiser's process asks the caller for every
answer (``AnswerCall``: a candidate text on a golden) and every score (``ScoreCall``: an
objective of an answer), reports each round (``Round``) and ends with the outcome. They
travel as ``worker.child_channel``'s messages: ``ask``, ``call`` and ``reply``, ``update``,
``done``.

Nothing here assumes that the text is a workflow's prompt: the caller decides what an
answer is (a workflow's output, a judge's verdict) and how it is scored.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.optimization.spend import Budget, Spend

AlgorithmName = Literal["gepa", "miprov2", "copro", "simba"]
StopReason = Literal["finished", "budget", "failed"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Golden(_Frozen):
    """One example a candidate is scored on (DeepEval's ``Golden``, named by ``id``)."""

    id: str
    input: str
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None


class Objective(_Frozen):
    """A score the caller gives every answer, higher is better, 0 to 1.

    ``name`` is the class name DeepEval shows beside its score in the feedback it writes
    (its own metrics' class names); ``threshold``: where an answer passes (MIPROv2 keeps
    only passing answers as demonstrations).
    """

    label: str
    name: str
    threshold: float = 0.5


class OptimizationRequest(_Frozen):
    """One search with DeepEval's ``PromptOptimizer``."""

    text: str = Field(min_length=1)
    goldens: list[Golden] = Field(min_length=2)
    objectives: list[Objective] = Field(min_length=1)
    model: JudgeSpec  # the optimiser model: diagnoses, rewrites, proposals
    algorithm: AlgorithmName = "gepa"
    options: dict[str, Any] = Field(default_factory=dict)  # DeepEval's keyword arguments
    seed: int = 0
    concurrency: int = Field(default=4, ge=1)
    budget: Budget = Budget()
    cache_namespace: str = "optimize"  # the model's judge-cache namespace

    @property
    def secrets(self) -> list[str]:
        """What no message of the optimiser's process may show: the model's key."""
        return self.model.secrets


class AnswerCall(_Frozen):
    """The optimiser asks for the answer of ``candidate`` on a golden."""

    call: Literal["answer"] = "answer"
    call_id: int
    candidate: str
    golden_id: str
    spend: Spend  # the optimiser's own spend so far (its model's calls)


class AnswerReply(_Frozen):
    """The answer (``answer_id`` names it in the score calls), or why there is none."""

    call_id: int
    answer_id: str | None = None
    output: str = ""
    stop: str | None = None  # a budget is spent: the search ends
    error: str | None = None
    spend: Spend = Spend()  # the caller's spend so far


class ScoreCall(_Frozen):
    """The optimiser asks for one objective's score of an answer."""

    call: Literal["score"] = "score"
    call_id: int
    answer_id: str
    objective: str
    spend: Spend


OptimiserCall = Annotated[AnswerCall | ScoreCall, Field(discriminator="call")]
CALLS: TypeAdapter[AnswerCall | ScoreCall] = TypeAdapter(OptimiserCall)
"""Reads a call of the optimiser: an answer or a score."""


class Scored(_Frozen):
    """One objective's score of an answer (normalised: higher is better), and why."""

    score: float
    success: bool
    reason: str | None = None


class ScoreReply(_Frozen):
    """The score, or why there is none (a budget spent, a judge that failed)."""

    call_id: int
    scored: Scored | None = None
    stop: str | None = None
    error: str | None = None
    spend: Spend = Spend()


class Candidate(_Frozen):
    """A text the search tried, where it came from, and its scores on the validation goldens.

    ``scores``: its per-golden scores on DeepEval's validation goldens (GEPA's Pareto set;
    the full training set for the others), empty when it was only tried on a minibatch;
    ``kept``: DeepEval's final table still holds it (GEPA drops a dominated candidate).
    """

    id: str
    text: str
    parent: str | None = None
    scores: list[float] = Field(default_factory=list)
    kept: bool = False

    @property
    def mean(self) -> float | None:
        """Its mean score on the validation goldens."""
        return sum(self.scores) / len(self.scores) if self.scores else None


class Round(_Frozen):
    """One round (a GEPA iteration, a MIPROv2 trial, a COPRO depth, a SIMBA iteration)."""

    number: int
    total: int
    best_score: float | None
    candidates: int
    spend: Spend


class OptimizationOutcome(_Frozen):
    """What the search found, how it ended, what it spent."""

    base_text: str
    best_text: str
    best_id: str | None
    base_score: float | None
    best_score: float | None
    candidates: list[Candidate]
    tried: list[str] = Field(default_factory=list)  # every text answered, first-asked first
    rounds: list[Round]
    stop: StopReason
    stop_detail: str | None = None
    spend: Spend
    model_spend: Spend = Spend()  # the optimiser model's own part of ``spend``
    seconds: float = 0.0

    @property
    def ended(self) -> str:
        """How the search ended, in words: finished, or what stopped it."""
        if self.stop == "finished":
            return "finished"
        return f"stopped: {self.stop} ({self.stop_detail})"

    def diff(self) -> str:
        """The best candidate against the text the search started from, line by line."""
        lines = difflib.unified_diff(
            self.base_text.splitlines(),
            self.best_text.splitlines(),
            "workflow",
            "candidate",
            lineterm="",
        )
        return "\n".join(lines) or "(the same text)"

    @property
    def improved(self) -> bool:
        """Whether the best candidate is another text than the one the search started from."""
        return self.best_text.strip() != self.base_text.strip()
