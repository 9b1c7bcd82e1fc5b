"""A day of online scores summed up, and the last window's pass rate against the one before.

An item (an execution or a chat session) passes when every metric scored on it passed.
The drop check compares two windows of ``windowDays`` days as the version comparison
compares a case's runs in two versions: one-sided Fisher's exact test and its tiers
(``regression``, ``likely_regression``, …), each pass rate with its Wilson 95% interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from statistics import fmean
from typing import Any, Self

from pydantic import BaseModel

from n8n_deepeval_pipeline.benchmark.online import DropCheck
from n8n_deepeval_pipeline.online.scoring import OnlineScore
from n8n_deepeval_pipeline.statistics.gates import fails_gate
from n8n_deepeval_pipeline.statistics.version_comparison import (
    Interval,
    Verdict,
    compare_case,
    wilson_interval,
)
from n8n_deepeval_pipeline.tables.rows import TableRow


def item_passes(scores: Iterable[OnlineScore]) -> dict[str, bool]:
    """Score id → whether every metric scored on that item passed."""
    passed: dict[str, bool] = {}
    for score in scores:
        passed[score.score_id] = passed.get(score.score_id, True) and score.success
    return passed


class DaySummary(TableRow):
    """The ``online_summary`` row of one day and workflow version (``all``: every version)."""

    table = "online_summary"

    workflow_hash: str
    """The version that served the day's items, or `all` for every version together."""
    day: datetime
    """Midnight UTC, the partition's start."""
    items: int
    """Executions and sessions scored."""
    executions: int
    """Single executions scored."""
    sessions: int
    """Chat sessions scored."""
    passed: int
    """Items whose every metric passed."""
    pass_rate: float | None
    """passed / items."""
    pass_rate_low: float | None
    """Lower bound of its Wilson 95% interval."""
    pass_rate_high: float | None
    """Upper bound of its Wilson 95% interval."""
    errors: int
    """Scores without a score."""
    cost_usd: float
    """Judge cost."""
    tokens: int
    """Judge tokens."""
    metric_means: dict[str, float]
    """Mean score per metric."""


def summarise_day(day: date, scores: list[OnlineScore], version: str) -> DaySummary:
    """The day's counts, pass rate with its Wilson interval, cost and per-metric means."""
    of_day = [score for score in scores if score.started_at.date() == day]
    passed = item_passes(of_day)
    kinds = {score.score_id: score.kind for score in of_day}
    interval = wilson_interval(sum(passed.values()), len(passed))
    by_metric: dict[str, list[float]] = defaultdict(list)
    for score in of_day:
        if score.score is not None:
            by_metric[score.metric].append(score.score)
    return DaySummary(
        workflow_hash=version,
        day=datetime(day.year, day.month, day.day, tzinfo=UTC),
        items=len(passed),
        executions=sum(kind == "execution" for kind in kinds.values()),
        sessions=sum(kind == "session" for kind in kinds.values()),
        passed=sum(passed.values()),
        pass_rate=sum(passed.values()) / len(passed) if passed else None,
        pass_rate_low=interval.lower if interval else None,
        pass_rate_high=interval.upper if interval else None,
        errors=sum(score.error_kind is not None for score in of_day),
        cost_usd=sum(score.cost_usd or 0.0 for score in of_day),
        tokens=sum(score.tokens for score in of_day),
        metric_means={metric: fmean(values) for metric, values in sorted(by_metric.items())},
    )


class ItemRate(BaseModel):
    """Items, passes and pass rate with its Wilson interval."""

    items: int
    passed: int
    rate: float | None
    interval: Interval | None

    @classmethod
    def of(cls, scores: Iterable[OnlineScore], **labels: Any) -> Self:
        """The rate of the items ``scores`` belong to, with the subclass's ``labels``."""
        passes = item_passes(scores)
        passed = sum(passes.values())
        return cls(
            items=len(passes),
            passed=passed,
            rate=passed / len(passes) if passes else None,
            interval=wilson_interval(passed, len(passes)),
            **labels,
        )

    def flags(self) -> list[bool]:
        """The items as pass flags (the comparison counts passes and items)."""
        return [True] * self.passed + [False] * (self.items - self.passed)


class WindowRate(ItemRate):
    """One window's items, passes and pass rate with its Wilson interval."""

    first_day: date
    last_day: date


class WindowComparison(BaseModel):
    """The last window against the window before it, and whether that is a drop to warn of."""

    before: WindowRate
    last: WindowRate
    verdict: Verdict
    p_value_drop: float | None
    dropped: bool


def _window(scores: list[OnlineScore], first: date, last: date) -> WindowRate:
    inside = (score for score in scores if first <= score.started_at.date() <= last)
    return WindowRate.of(inside, first_day=first, last_day=last)


def compare_windows(scores: list[OnlineScore], day: date, check: DropCheck) -> WindowComparison:
    """The ``windowDays`` ending on ``day`` against the ``windowDays`` before them."""
    span = timedelta(days=check.window_days)
    last = _window(scores, day - span + timedelta(days=1), day)
    before = _window(scores, day - 2 * span + timedelta(days=1), day - span)
    case = compare_case("online", before.flags(), last.flags())
    return WindowComparison(
        before=before,
        last=last,
        verdict=case.verdict,
        p_value_drop=case.p_value_drop,
        dropped=fails_gate(case.verdict, check.fail_on),
    )
