"""What a search spends, what it may spend, and the one place that says when it must stop.

Spending happens on both sides of the process boundary: the calling process pays for the
answers (workflow calls) and the metrics' judge calls, the optimiser's process for its own
model's calls (diagnoses, rewrites, proposals). Each side keeps its own ``Spend`` and
sends it with every message, so that either side can check the whole against the
``Budget`` before it pays for more. What is replayed (an answer from the run's journal, a
score from the score journal, a judge answer from the cache) costs nothing and counts
nothing: a budget caps what this run pays.
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict


class BudgetReached(RuntimeError):
    """A budget is spent: nothing more may be paid for (the message says which)."""


class Budget(BaseModel):
    """Caps on the search (None: no cap)."""

    model_config = ConfigDict(frozen=True)

    answer_calls: int | None = None  # calls of the model under optimisation (a workflow)
    judge_calls: int | None = None
    cost_usd: float | None = None


class Spend(BaseModel):
    """Calls made and paid for, and what was replayed for free."""

    model_config = ConfigDict(frozen=True)

    answer_calls: int = 0
    replayed_answers: int = 0
    judge_calls: int = 0
    cached_judge_calls: int = 0
    replayed_scores: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_models: tuple[str, ...] = ()  # judge models without a price: their cost is unknown

    def __add__(self, other: Spend) -> Spend:
        numbers = {
            name: getattr(self, name) + getattr(other, name)
            for name in Spend.model_fields
            if name != "unpriced_models"
        }
        unpriced = tuple(dict.fromkeys(self.unpriced_models + other.unpriced_models))
        return Spend(**numbers, unpriced_models=unpriced)


def over(budget: Budget, spend: Spend, paying_for: str) -> str | None:
    """Which cap stops a payment for ``paying_for`` (``answer`` or ``judge``), or None."""
    answers, judged = budget.answer_calls, budget.judge_calls
    if paying_for == "answer" and answers is not None and spend.answer_calls >= answers:
        return f"workflow calls: {spend.answer_calls} of {answers}"
    if paying_for == "judge" and judged is not None and spend.judge_calls >= judged:
        return f"judge calls: {spend.judge_calls} of {judged}"
    if budget.cost_usd is not None and spend.cost_usd >= budget.cost_usd:
        return f"cost: ${spend.cost_usd:.4f} of ${budget.cost_usd:.4f}"
    return None


class SpendLedger:
    """One side's spend, and the other side's as last told, checked against the budget."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.own = Spend()
        self.theirs = Spend()
        self._lock = threading.Lock()

    @property
    def total(self) -> Spend:
        """Both sides' spend."""
        return self.own + self.theirs

    def told(self, theirs: Spend) -> None:
        """The other side's spend, as its latest message says."""
        with self._lock:
            self.theirs = theirs

    def admit(self, paying_for: str) -> None:
        """Refuse a payment the budget no longer allows (``BudgetReached``)."""
        reason = over(self.budget, self.total, paying_for)
        if reason is not None:
            raise BudgetReached(reason)

    def reserve(self, paying_for: str, spent: Spend) -> None:
        """Check the budget and count ``spent`` in one step (``BudgetReached`` if it is over).

        For what is counted before it is paid (a workflow call): calls made at once cannot
        all pass the check before any of them is counted.
        """
        with self._lock:
            reason = over(self.budget, self.own + self.theirs, paying_for)
            if reason is not None:
                raise BudgetReached(reason)
            self.own = self.own + spent

    def add(self, spent: Spend) -> None:
        """Count what was just spent (or replayed) on this side."""
        with self._lock:
            self.own = self.own + spent

    def restate(self, own: Spend) -> None:
        """Set this side's spend, counted elsewhere (a usage counter), as it is now."""
        with self._lock:
            self.own = own
