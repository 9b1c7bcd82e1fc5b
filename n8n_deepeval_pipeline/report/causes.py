"""What made a case drop: the metrics and failure categories that fail more of its runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from n8n_deepeval_pipeline.report.model import DropCause, RunDetail


def _failing_metrics(run: RunDetail) -> set[str]:
    # Only the metrics that decide a failed run, as its failure categories count them.
    if run.passed:
        return set()
    return {metric.metric for metric in run.metrics if metric.counted and metric.failed}


def _causes_of(
    kind: Literal["metric", "category"],
    baseline: Counter[str],
    candidate: Counter[str],
    runs: tuple[int, int],
) -> list[DropCause]:
    """The causes of this kind whose share of failed runs rose, the largest rise first."""
    base_runs, cand_runs = runs
    rises = []
    for name in sorted(candidate):
        rise = Fraction(candidate[name], cand_runs) - Fraction(baseline[name], base_runs)
        if rise > 0:
            cause = DropCause(
                kind=kind,
                name=name,
                baseline_failed=baseline[name],
                baseline_runs=base_runs,
                candidate_failed=candidate[name],
                candidate_runs=cand_runs,
            )
            rises.append((rise, cause))
    return [cause for _, cause in sorted(rises, key=lambda item: -item[0])]


def drop_causes(
    baseline: Sequence[RunDetail], candidate: Sequence[RunDetail]
) -> tuple[DropCause, ...]:
    """What fails a larger share of the candidate's runs than of the baseline's.

    The metrics first, then the failure categories, each the largest rise first; none
    unless the case passes less often than in the baseline.
    """
    if not baseline or not candidate:
        return ()
    base_passed = Fraction(sum(run.passed for run in baseline), len(baseline))
    if Fraction(sum(run.passed for run in candidate), len(candidate)) >= base_passed:
        return ()
    runs = (len(baseline), len(candidate))
    metrics = _causes_of(
        "metric",
        Counter(name for run in baseline for name in _failing_metrics(run)),
        Counter(name for run in candidate for name in _failing_metrics(run)),
        runs,
    )
    categories = _causes_of(
        "category",
        Counter(c for run in baseline for c in run.failure_categories),
        Counter(c for run in candidate for c in run.failure_categories),
        runs,
    )
    return (*metrics, *categories)
