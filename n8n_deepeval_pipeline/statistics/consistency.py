"""Consistency of repeated runs of one case, with the seed's formulas.

- variance and std are population statistics; cv = sample SD / mean, and 0 when the mean
  is 0 or there is a single run;
- per metric: runCount, mean, std, variance, min, max, cv, passRate, majoritySuccess
  (passRate > 0.5);
- labels: Shannon entropy in bits, normalised by log2 of the number of distinct labels
  (0 for one label), agreement = share of the most common label;
- overallConsistency: ``cv`` → 1 − min(1, mean of per-metric cv); ``entropy`` → 1 −
  normalised entropy; ``agreement`` → agreement.
Beyond the seed: errored results count as failures and carry no score, and pass@k /
pass^k are the unbiased estimators 1 − C(n−c,k)/C(n,k) and C(c,k)/C(n,k).
"""

from __future__ import annotations

import math
from collections import Counter
from statistics import fmean, pstdev, pvariance, stdev
from typing import Literal

from pydantic import BaseModel

Basis = Literal["cv", "entropy", "agreement"]


class RunResult(BaseModel):
    """One run of a case, as consistency sees it."""

    overall_score: float | None
    overall_success: bool
    metric_scores: dict[str, float | None]
    metric_success: dict[str, bool]
    label: str | None = None


class ScoreStats(BaseModel):
    """Spread of a list of scores."""

    mean: float | None
    variance: float | None
    std: float | None
    cv: float | None
    min: float | None
    max: float | None


class MetricStats(ScoreStats):
    """Spread and pass rate of one metric over a case's runs."""

    metric: str
    run_count: int
    pass_rate: float
    majority_success: bool


class LabelStats(BaseModel):
    """How the runs' labels agree."""

    distribution: dict[str, int]
    entropy: float
    normalized_entropy: float
    agreement: float
    majority_label: str


class CaseConsistency(BaseModel):
    """Everything consistency_stats stores for one case."""

    n_runs: int
    score: ScoreStats
    per_metric: list[MetricStats]
    pass_rate: float
    majority_success: bool
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    labels: LabelStats | None
    overall_consistency: float | None


def coefficient_of_variation(values: list[float]) -> float:
    """Sample SD / mean; 0 for a zero mean or fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = fmean(values)
    return 0.0 if mean == 0 else stdev(values) / mean


def score_stats(values: list[float | None]) -> ScoreStats:
    """Population variance and std, sample-based cv, min and max of the present scores."""
    present = [value for value in values if value is not None]
    if not present:
        return ScoreStats(mean=None, variance=None, std=None, cv=None, min=None, max=None)
    return ScoreStats(
        mean=fmean(present),
        variance=pvariance(present),
        std=pstdev(present),
        cv=coefficient_of_variation(present),
        min=min(present),
        max=max(present),
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k runs drawn from n (c of them passing) passes."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all of k runs drawn from n (c of them passing) pass."""
    return math.comb(c, k) / math.comb(n, k)


def label_stats(labels: list[str]) -> LabelStats | None:
    """Entropy (bits), normalised entropy and agreement of the labels; None without labels."""
    if not labels:
        return None
    counts = Counter(labels)  # insertion-ordered: ties go to the label seen first
    total = len(labels)
    # abs(): a single label gives -0.0, which would print as a negative entropy.
    entropy = abs(-sum((count / total) * math.log2(count / total) for count in counts.values()))
    normalized = entropy / math.log2(len(counts)) if len(counts) > 1 else 0.0
    majority, modal = max(counts.items(), key=lambda item: item[1])
    return LabelStats(
        distribution=dict(counts),
        entropy=entropy,
        normalized_entropy=normalized,
        agreement=modal / total,
        majority_label=majority,
    )


def _metric_stats(runs: list[RunResult]) -> list[MetricStats]:
    names = sorted({name for run in runs for name in run.metric_success})
    stats = []
    for name in names:
        results = [run for run in runs if name in run.metric_success]
        passed = sum(1 for run in results if run.metric_success[name])
        spread = score_stats([run.metric_scores.get(name) for run in results])
        stats.append(
            MetricStats(
                metric=name,
                run_count=len(results),
                pass_rate=passed / len(results),
                majority_success=passed / len(results) > 0.5,
                **spread.model_dump(),
            )
        )
    return stats


def _overall(
    basis: Basis, per_metric: list[MetricStats], labels: LabelStats | None
) -> float | None:
    if basis == "cv":
        cvs = [stats.cv for stats in per_metric if stats.cv is not None]
        return 1.0 - min(1.0, fmean(cvs)) if cvs else 0.0
    if labels is None:
        return None
    return 1.0 - labels.normalized_entropy if basis == "entropy" else labels.agreement


def case_consistency(runs: list[RunResult], basis: Basis) -> CaseConsistency:
    """Consistency statistics of one case's runs."""
    n = len(runs)
    if n == 0:
        raise ValueError("a case needs at least one run")
    passed = sum(1 for run in runs if run.overall_success)
    per_metric = _metric_stats(runs)
    labels = label_stats([run.label for run in runs if run.label is not None])
    return CaseConsistency(
        n_runs=n,
        score=score_stats([run.overall_score for run in runs]),
        per_metric=per_metric,
        pass_rate=passed / n,
        majority_success=passed / n > 0.5,
        pass_at_k={k: pass_at_k(n, passed, k) for k in range(1, n + 1)},
        pass_hat_k={k: pass_hat_k(n, passed, k) for k in range(1, n + 1)},
        labels=labels,
        overall_consistency=_overall(basis, per_metric, labels),
    )
