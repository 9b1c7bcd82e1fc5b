"""Version comparison: how a candidate workflow version's runs differ from a baseline's.

The seed's regression detection, on cases matched by row id:

- per case, one-sided Fisher's exact tests on the 2×2 pass/fail table (``p_drop``: the
  candidate passes less often, ``p_rise``: more often) and a verdict, the first that
  matches winning:

  1. ``regression``: p_drop < 0.05, drop ≥ 30 points, baseline pass rate ≥ 70%;
  2. ``unreliable_baseline``: the same confident drop on a baseline under 70%;
  3. ``likely_regression``: p_drop < 0.20, drop ≥ 15 points, baseline ≥ 50%;
  4. ``improvement``: p_rise < 0.05, rise ≥ 30 points, with no baseline gate;
  5. ``worth_watching``: moved ≥ 35 points either way;
  6. ``stable``;

  and ``insufficient_data`` when either side has no runs (a missing case has none).
  Where the seed is more precise than a plain list: a confident drop on a flaky baseline
  is "surfaced but not flagged", so ``unreliable_baseline`` is tried before
  ``likely_regression``; an improvement skips only the reliability gate, so it still
  needs the hard tier's p-value and 30 points.
- each version's overall pass rate over the cases both versions have (so the two are
  comparable), with a Wilson 95% score interval;
- failure-category drift over all runs of each version: a category is notable when its
  rate moves ≥ 5 points and its count differs by ≥ 3 from the baseline count scaled to
  the candidate's number of runs.

Beyond the seed: per-metric mean score and pass rate deltas, and failure categories
derived from metric error kinds (the seed's verifier names them itself). Rates are
compared as exact fractions so that a boundary such as exactly 30 points is not lost to
float rounding (0.7 − 0.4 < 0.3 in floats).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import count
from math import comb, sqrt
from statistics import NormalDist
from types import MappingProxyType
from typing import Literal, NamedTuple, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, computed_field

from n8n_deepeval_pipeline.statistics.aggregate import mean_of_present
from n8n_deepeval_pipeline.statistics.gates import GateVerdict, fails_gate

Verdict = Literal[
    "regression",
    "likely_regression",
    "unreliable_baseline",
    "improvement",
    "worth_watching",
    "stable",
    "insufficient_data",
]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

FailureCategory = Literal[
    "target_error", "judge_error", "missing_input", "timeout", "worker_crash", "below_threshold"
]
FAILURE_CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)

# Every error kind a metric result can carry (evaluation.ErrorKind), in one category.
FAILURE_CATEGORY_OF_ERROR_KIND: Mapping[str, FailureCategory] = MappingProxyType(
    {
        "target_error": "target_error",  # the workflow gave nothing to score
        "judge_auth": "judge_error",
        "judge_error": "judge_error",
        "judge_forbidden": "judge_error",
        "judge_invalid_output": "judge_error",
        "judge_rate_limited": "judge_error",
        "judge_unavailable": "judge_error",
        "metric_error": "judge_error",  # scoring itself failed, not the workflow
        "missing_input": "missing_input",
        "invalid_config": "missing_input",  # the metric could not be set up from its inputs
        "timeout": "timeout",
        "worker_crash": "worker_crash",
    }
)


@dataclass(frozen=True)
class _Gate:
    """One tier's conditions: p-value below ``max_p``, move and baseline rate at least."""

    max_p: float
    min_move: Fraction
    min_baseline: Fraction = Fraction(0)

    def passes(self, p_value: float, move: Fraction, baseline_rate: Fraction) -> bool:
        return p_value < self.max_p and move >= self.min_move and baseline_rate >= self.min_baseline


_REGRESSION = _Gate(0.05, Fraction(30, 100), Fraction(70, 100))
_CONFIDENT_DROP = _Gate(0.05, Fraction(30, 100))  # the regression gate without reliability
_LIKELY_REGRESSION = _Gate(0.20, Fraction(15, 100), Fraction(50, 100))
_IMPROVEMENT = _Gate(0.05, Fraction(30, 100))
_DROP_TIERS: tuple[tuple[Verdict, _Gate], ...] = (
    ("regression", _REGRESSION),
    ("unreliable_baseline", _CONFIDENT_DROP),
    ("likely_regression", _LIKELY_REGRESSION),
)
_WATCH_MOVE = Fraction(35, 100)
_DRIFT_MIN_RATE_MOVE = Fraction(5, 100)
_DRIFT_MIN_COUNT_CHANGE = 3


_Z_95 = NormalDist().inv_cdf(0.975)  # the two-sided 95% quantile


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class MetricRun(_Frozen):
    """One metric's result on one run, as the comparison sees it."""

    metric: str
    score: float | None
    success: bool
    error_kind: str | None = None
    counted: bool = True  # decides the run under the pass rule (aggregate.metrics)


class RunOutcome(_Frozen):
    """One run of a case: whether it passed under the benchmark's pass rule, and its metrics."""

    passed: bool
    metrics: tuple[MetricRun, ...] = ()


VersionRuns = Mapping[str, Sequence[RunOutcome]]
"""One workflow version's runs, by dataset row id."""


class PassCount(_Frozen):
    """Passed runs out of runs; the rate is None without runs."""

    passed: int
    runs: int
    rate: float | None


class Interval(_Frozen):
    """A confidence interval for a rate."""

    lower: float
    upper: float


class OverallPassRate(PassCount):
    """A version's pass rate with its Wilson 95% score interval (None without runs)."""

    interval: Interval | None


@dataclass(frozen=True)
class PValues:
    """One-sided Fisher's exact p-values that the candidate passes less / more often."""

    drop: float
    rise: float


class CaseComparison(_Frozen):
    """One case's pass counts in both versions and its verdict.

    ``delta`` is candidate rate − baseline rate; it and the p-values are None for
    ``insufficient_data``.
    """

    row_id: str
    baseline: PassCount
    candidate: PassCount
    delta: float | None
    p_value_drop: float | None
    p_value_rise: float | None
    verdict: Verdict

    @computed_field  # type: ignore[prop-decorator]
    @property
    def p_value(self) -> float | None:
        """The one-sided p in the direction the case moved (a drop's when it did not move)."""
        if self.delta is not None and self.delta > 0:
            return self.p_value_rise
        return self.p_value_drop


class MetricSide(_Frozen):
    """One metric over one version's runs; mean and pass rate are None without results."""

    results: int
    mean_score: float | None
    pass_rate: float | None


class MetricDelta(_Frozen):
    """One metric in both versions; deltas are candidate − baseline, None if either is."""

    metric: str
    baseline: MetricSide
    candidate: MetricSide
    mean_score_delta: float | None
    pass_rate_delta: float | None


class CategoryDrift(_Frozen):
    """How often runs failed for one reason in each version.

    ``expected_candidate_count`` is the baseline count scaled to the candidate's runs.
    """

    category: FailureCategory
    baseline_count: int
    baseline_rate: float
    candidate_count: int
    candidate_rate: float
    rate_delta: float
    expected_candidate_count: float
    notable: bool


class VersionComparison(_Frozen):
    """Everything the comparison of two workflow versions finds."""

    cases: tuple[CaseComparison, ...]
    baseline_overall: OverallPassRate
    candidate_overall: OverallPassRate
    overall_delta: float | None
    metric_deltas: tuple[MetricDelta, ...]
    failure_drift: tuple[CategoryDrift, ...]
    verdict_counts: dict[Verdict, int]


def pass_count(passes: Sequence[bool]) -> PassCount:
    """How many of the runs passed."""
    passed = sum(passes)
    return PassCount(passed=passed, runs=len(passes), rate=passed / len(passes) if passes else None)


def fisher_p_values(baseline: PassCount, candidate: PassCount) -> PValues:
    """One-sided Fisher's exact tests on the table [[cand pass, cand fail], [base ...]]."""
    return _fisher_p_values(baseline.passed, baseline.runs, candidate.passed, candidate.runs)


# Cases with the same runs share a handful of tables (36 with 5 runs a side): SciPy's test
# costs ~0.25 ms, and a page of 50 versions compares 2,500 cases.
@functools.lru_cache(maxsize=4096)
def _fisher_p_values(base_passed: int, base_runs: int, passed: int, runs: int) -> PValues:
    from scipy.stats import fisher_exact  # a second to import: only when a case is compared

    table = np.array([[passed, runs - passed], [base_passed, base_runs - base_passed]])
    return PValues(
        drop=float(fisher_exact(table, alternative="less").pvalue),
        rise=float(fisher_exact(table, alternative="greater").pvalue),
    )


def wilson_interval(passed: int, runs: int) -> Interval | None:
    """The Wilson 95% score interval of ``passed / runs``; None without runs.

    Its closed form, as SciPy's ``binomtest(...).proportion_ci(method="wilson")`` computes
    it (the tests compare the two), without SciPy's second of imports for a report.
    """
    if runs == 0:
        return None
    z = _Z_95
    rate = passed / runs
    denominator = 1 + z * z / runs
    centre = (rate + z * z / (2 * runs)) / denominator
    half = z * sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs)) / denominator
    lower = 0.0 if passed == 0 else max(centre - half, 0.0)
    upper = 1.0 if passed == runs else min(centre + half, 1.0)
    return Interval(lower=lower, upper=upper)


def _verdict(baseline: PassCount, candidate: PassCount, p_values: PValues) -> Verdict:
    """The first tier a case with runs on both sides meets (see the module docstring)."""
    return _tier(baseline.passed, baseline.runs, candidate.passed, candidate.runs, p_values)


@functools.lru_cache(maxsize=4096)  # as Fisher's test: a few tables recur across cases
def _tier(base_passed: int, base_runs: int, passed: int, runs: int, p_values: PValues) -> Verdict:
    baseline_rate = Fraction(base_passed, base_runs)
    change = Fraction(passed, runs) - baseline_rate
    for tier, gate in _DROP_TIERS:
        if gate.passes(p_values.drop, -change, baseline_rate):
            return tier
    if _IMPROVEMENT.passes(p_values.rise, change, baseline_rate):
        return "improvement"
    return "worth_watching" if abs(change) >= _WATCH_MOVE else "stable"


def compare_case(
    row_id: str, baseline: Sequence[bool], candidate: Sequence[bool]
) -> CaseComparison:
    """Compare one case's run pass flags in the two versions."""
    base, cand = pass_count(baseline), pass_count(candidate)
    if base.rate is None or cand.rate is None:
        return CaseComparison(
            row_id=row_id,
            baseline=base,
            candidate=cand,
            delta=None,
            p_value_drop=None,
            p_value_rise=None,
            verdict="insufficient_data",
        )
    return _compared(row_id, base, cand, fisher_p_values(base, cand))


def _compared(row_id: str, base: PassCount, cand: PassCount, p_values: PValues) -> CaseComparison:
    assert base.rate is not None and cand.rate is not None  # both sides have runs
    return CaseComparison(
        row_id=row_id,
        baseline=base,
        candidate=cand,
        delta=cand.rate - base.rate,
        p_value_drop=p_values.drop,
        p_value_rise=p_values.rise,
        verdict=_verdict(base, cand, p_values),
    )


def overall_pass_rate(runs: Sequence[RunOutcome]) -> OverallPassRate:
    """The pass rate of the runs with its Wilson interval."""
    count = pass_count([run.passed for run in runs])
    return OverallPassRate(**count.model_dump(), interval=wilson_interval(count.passed, count.runs))


def _difference(candidate: float | None, baseline: float | None) -> float | None:
    return None if candidate is None or baseline is None else candidate - baseline


def _metric_side(metric: str, runs: Sequence[RunOutcome]) -> MetricSide:
    results = [result for run in runs for result in run.metrics if result.metric == metric]
    if not results:
        return MetricSide(results=0, mean_score=None, pass_rate=None)
    # As in the run aggregate, an errored metric counts as failed.
    passed = sum(1 for result in results if result.success and result.error_kind is None)
    return MetricSide(
        results=len(results),
        mean_score=mean_of_present([result.score for result in results]),
        pass_rate=passed / len(results),
    )


def metric_deltas(
    baseline: Sequence[RunOutcome], candidate: Sequence[RunOutcome]
) -> tuple[MetricDelta, ...]:
    """Mean score and pass rate of each metric label in both versions, by label."""
    labels = sorted({result.metric for run in (*baseline, *candidate) for result in run.metrics})
    deltas = []
    for label in labels:
        base, cand = _metric_side(label, baseline), _metric_side(label, candidate)
        deltas.append(
            MetricDelta(
                metric=label,
                baseline=base,
                candidate=cand,
                mean_score_delta=_difference(cand.mean_score, base.mean_score),
                pass_rate_delta=_difference(cand.pass_rate, base.pass_rate),
            )
        )
    return tuple(deltas)


def _metric_failure(result: MetricRun) -> FailureCategory:
    if result.error_kind is None:
        return "below_threshold"
    try:
        return FAILURE_CATEGORY_OF_ERROR_KIND[result.error_kind]
    except KeyError:
        raise ValueError(f"error kind {result.error_kind!r} has no failure category") from None


def run_failure_categories(run: RunOutcome) -> frozenset[FailureCategory]:
    """Why a run failed, one category per failing metric's reason.

    A run that passed under its pass rule has none, even if some metric failed, and only
    the metrics that decide the run count: the categories explain failed runs, as the
    seed's per-trial failure category does.
    """
    if run.passed:
        return frozenset()
    failing = [
        result
        for result in run.metrics
        if result.counted and (not result.success or result.error_kind)
    ]
    return frozenset(_metric_failure(result) for result in failing)


def category_drift(
    category: FailureCategory,
    baseline: tuple[int, int],
    candidate: tuple[int, int],
) -> CategoryDrift:
    """Drift of one category from its (count, runs) in each version; runs must be > 0."""
    (base_count, base_runs), (cand_count, cand_runs) = baseline, candidate
    base_rate, cand_rate = Fraction(base_count, base_runs), Fraction(cand_count, cand_runs)
    # A version with more runs has proportionally more failures without anything changing.
    expected = Fraction(base_count * cand_runs, base_runs)
    return CategoryDrift(
        category=category,
        baseline_count=base_count,
        baseline_rate=float(base_rate),
        candidate_count=cand_count,
        candidate_rate=float(cand_rate),
        rate_delta=float(cand_rate - base_rate),
        expected_candidate_count=float(expected),
        notable=abs(cand_rate - base_rate) >= _DRIFT_MIN_RATE_MOVE
        and abs(cand_count - expected) >= _DRIFT_MIN_COUNT_CHANGE,
    )


def failure_drift(
    baseline: Sequence[RunOutcome], candidate: Sequence[RunOutcome]
) -> tuple[CategoryDrift, ...]:
    """Every category's drift between the versions' runs; none if either has no runs."""
    if not baseline or not candidate:
        return ()
    base_counts = Counter(c for run in baseline for c in run_failure_categories(run))
    cand_counts = Counter(c for run in candidate for c in run_failure_categories(run))
    return tuple(
        category_drift(
            category,
            (base_counts[category], len(baseline)),
            (cand_counts[category], len(candidate)),
        )
        for category in FAILURE_CATEGORIES
    )


def _runs_of(version: VersionRuns, row_ids: Sequence[str]) -> list[RunOutcome]:
    return [run for row_id in row_ids for run in version.get(row_id, ())]


def compare_versions(baseline: VersionRuns, candidate: VersionRuns) -> VersionComparison:
    """Compare a candidate version's runs with a baseline's, case by case and overall."""
    row_ids = sorted(baseline.keys() | candidate.keys())
    cases = tuple(
        compare_case(
            row_id,
            [run.passed for run in baseline.get(row_id, ())],
            [run.passed for run in candidate.get(row_id, ())],
        )
        for row_id in row_ids
    )
    shared = sorted(baseline.keys() & candidate.keys())
    base_shared, cand_shared = _runs_of(baseline, shared), _runs_of(candidate, shared)
    base_overall, cand_overall = overall_pass_rate(base_shared), overall_pass_rate(cand_shared)
    counts = Counter(case.verdict for case in cases)
    return VersionComparison(
        cases=cases,
        baseline_overall=base_overall,
        candidate_overall=cand_overall,
        overall_delta=_difference(cand_overall.rate, base_overall.rate),
        metric_deltas=metric_deltas(base_shared, cand_shared),
        failure_drift=failure_drift(_runs_of(baseline, row_ids), _runs_of(candidate, row_ids)),
        verdict_counts={name: counts[name] for name in VERDICTS},
    )


def cases_failing_gate(comparison: VersionComparison, fail_on: GateVerdict) -> list[str]:
    """Row ids whose verdict is ``fail_on`` or a surer regression."""
    return [case.row_id for case in comparison.cases if fails_gate(case.verdict, fail_on)]


class GateReach(NamedTuple):
    """Whether a gate can fire with a number of runs per case in each version."""

    runs: int
    surest_drop_p_value: float  # every baseline run passes, every candidate run fails
    max_p_value: float  # what the gate's tier asks for (p below it)
    fewest_runs: int  # runs per case from which the surest drop fails the gate

    @property
    def reachable(self) -> bool:
        """Whether some case with these runs can fail the gate."""
        return self.runs >= self.fewest_runs


def _surest_drop(runs: int) -> CaseComparison:
    """Every run passes before and fails after: if any case fails a gate, this one does.

    Its table is the only one as extreme as itself, so Fisher's one-sided p-value is
    that table's hypergeometric probability, 1 / C(2n, n): the exact value, where SciPy's
    may differ in the last digit (validate then starts without SciPy).
    """
    base, cand = pass_count([True] * runs), pass_count([False] * runs)
    return _compared("", base, cand, PValues(drop=1 / comb(2 * runs, runs), rise=1.0))


def gate_reach(fail_on: GateVerdict, runs: int) -> GateReach:
    """Whether ``fail_on`` can fire with ``runs`` runs per case, and from how many it can."""
    fewest = next(n for n in count(1) if fails_gate(_surest_drop(n).verdict, fail_on))
    p_value = _surest_drop(runs).p_value_drop
    assert p_value is not None  # both sides have runs
    return GateReach(runs, p_value, dict(_DROP_TIERS)[fail_on].max_p, fewest)
