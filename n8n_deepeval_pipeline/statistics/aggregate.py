"""Run aggregates: one overall score and success per run, from its metric results.

Pass rules are the seed Aggregate's (``allPass``, ``anyPass``, ``majorityPass`` — strictly
more than half). Beyond the seed, an errored metric counts as failed, and
``overall_score`` is the mean of direction-normalised scores; the seed's raw mean of
scores is kept beside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import fmean
from typing import Literal

from pydantic import BaseModel

PassRule = Literal["allPass", "anyPass", "majorityPass"]


class MetricOutcome(BaseModel):
    """One metric's result for a run, as the aggregate sees it."""

    metric: str
    score: float | None
    normalised_score: float | None
    success: bool
    error_kind: str | None = None


class AggregateResult(BaseModel):
    """The overall result of one run."""

    overall_score: float | None
    raw_mean_score: float | None
    overall_success: bool
    passed: int
    counted: int
    errors: int


def rule_passes(rule: PassRule, passed: int, counted: int) -> bool:
    """Whether ``passed`` successes out of ``counted`` metrics satisfy the rule."""
    if counted == 0:
        return False
    if rule == "allPass":
        return passed == counted
    if rule == "anyPass":
        return passed > 0
    return passed > counted / 2


def decided_by(counted: Iterable[str], left_out: Iterable[str]) -> set[str]:
    """The counted metrics less those ``left_out``; all of them if none would be left.

    What decides no run (a dry-run placeholder, a metric people have not calibrated) is
    left out only while something else can decide: a run is never decided by nothing.
    """
    kept = set(counted)
    remaining = kept - set(left_out)
    return remaining or kept


def mean_of_present(values: list[float | None]) -> float | None:
    """The mean of the values that are there (errored metrics carry none); None if none are."""
    present = [value for value in values if value is not None]
    return fmean(present) if present else None


def aggregate_run(outcomes: list[MetricOutcome], rule: PassRule) -> AggregateResult:
    """Aggregate the metrics that count for one run (errors fail and carry no score)."""
    passed = sum(1 for outcome in outcomes if outcome.success and outcome.error_kind is None)
    return AggregateResult(
        overall_score=mean_of_present([outcome.normalised_score for outcome in outcomes]),
        raw_mean_score=mean_of_present([outcome.score for outcome in outcomes]),
        overall_success=rule_passes(rule, passed, len(outcomes)),
        passed=passed,
        counted=len(outcomes),
        errors=sum(1 for outcome in outcomes if outcome.error_kind is not None),
    )
