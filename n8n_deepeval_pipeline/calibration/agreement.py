"""How far a judge agrees with people, and people with each other, beyond chance.

Every figure comes from scikit-learn (Cohen's kappa, weighted kappa, the confusion
matrix) or ``krippendorff`` (alpha); this module only sets the data in front of them.
Kappa's 95% interval is a percentile bootstrap that resamples *clusters*, not labels:
the repeated runs of one dataset row (and that row in other versions) answer one input,
so their labels are not independent, and resampling them one by one would make the
interval too narrow. The resampling is seeded: the same labels give the same interval.
An undefined statistic (every verdict and label one class: kappa is 0/0) is said, never
turned into a number.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.calibration.judged import JudgedLabel

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20260611
RATING_SCALE = (1, 2, 3, 4, 5)
_VERDICTS = (False, True)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


def _codes(values: Sequence[Hashable], labels: Sequence[Hashable]) -> Any:
    """The values as the positions of ``labels`` (an integer array scikit-learn reads fast)."""
    position = {label: index for index, label in enumerate(labels)}
    return np.fromiter((position[value] for value in values), dtype=np.int64, count=len(values))


def kappa(
    first: Sequence[Hashable],
    second: Sequence[Hashable],
    labels: Sequence[Hashable] = _VERDICTS,
    weights: str | None = None,
) -> float | None:
    """scikit-learn's Cohen's kappa of two raters; None where it is undefined (0/0).

    ``labels`` in order (a weighted kappa's distances are their positions' distances).
    """
    return _coded_kappa(_codes(first, labels), _codes(second, labels), len(labels), weights)


def _coded_kappa(
    first: Any, second: Any, classes: int, weights: str | None = None, counts: Any = None
) -> float | None:
    """Kappa of coded ratings (each pair ``counts`` times, when given)."""
    from sklearn.exceptions import UndefinedMetricWarning  # ~0.3 s: only when measuring
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 before sklearn says undefined
        value = cohen_kappa_score(
            first, second, labels=list(range(classes)), weights=weights, sample_weight=counts
        )
    return None if np.isnan(value) else float(value)


def _kappa_of_cells(cells: tuple[int, ...], classes: int) -> float | None:
    """Kappa of a contingency table (pair ``i`` is first ``i // classes``, second ``i % classes``).

    Kappa depends on the table alone: scikit-learn is given each non-empty cell once,
    weighted by its count.
    """
    present = [cell for cell, count in enumerate(cells) if count]
    return _coded_kappa(
        np.array([cell // classes for cell in present]),
        np.array([cell % classes for cell in present]),
        classes,
        counts=np.array([cells[cell] for cell in present], dtype=float),
    )


class KappaEstimate(_Frozen):
    """Cohen's kappa with its 95% bootstrap interval (resampling clusters)."""

    kappa: float | None
    low: float | None
    high: float | None
    undefined: str | None = None  # why kappa is undefined, if it is
    resamples: int = 0  # bootstrap resamples in which kappa was defined
    clusters: int = 0


Pair = tuple[Hashable, Hashable]


def bootstrap_kappa(
    clusters: Sequence[Sequence[Pair]],
    labels: Sequence[Hashable] = _VERDICTS,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float | None, float | None, int]:
    """The 2.5th and 97.5th percentiles of kappa over resampled clusters, and resamples used.

    Each resample draws as many clusters as there are, with replacement, and keeps all of
    each drawn cluster's pairs; resamples where kappa is undefined are left out.
    """
    if len(clusters) < 2:
        return None, None, 0
    first = _codes([a for cluster in clusters for a, _ in cluster], labels)
    second = _codes([b for cluster in clusters for _, b in cluster], labels)
    ends = np.cumsum([len(cluster) for cluster in clusters])
    members = [
        np.arange(end - len(cluster), end) for end, cluster in zip(ends, clusters, strict=True)
    ]
    classes = len(labels)
    generator = np.random.default_rng(seed)
    known: dict[tuple[int, ...], float | None] = {}  # resamples often repeat a table
    values: list[float] = []
    for _ in range(resamples):
        drawn = generator.integers(0, len(clusters), len(clusters))
        picked = np.concatenate([members[index] for index in drawn])
        table = np.bincount(first[picked] * classes + second[picked], minlength=classes**2)
        cells = tuple(int(count) for count in table)
        if cells not in known:
            known[cells] = _kappa_of_cells(cells, classes)
        value = known[cells]
        if value is not None:
            values.append(value)
    if not values:
        return None, None, 0
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high), len(values)


def kappa_estimate(
    clusters: Sequence[Sequence[Pair]], labels: Sequence[Hashable] = _VERDICTS
) -> KappaEstimate:
    """Kappa over every pair of every cluster, with its bootstrap interval."""
    pairs = [pair for cluster in clusters for pair in cluster]
    value = kappa([a for a, _ in pairs], [b for _, b in pairs], labels) if pairs else None
    if value is None:
        return KappaEstimate(
            kappa=None, low=None, high=None, undefined=_why_undefined(pairs), clusters=len(clusters)
        )
    low, high, used = bootstrap_kappa(clusters, labels)
    return KappaEstimate(kappa=value, low=low, high=high, resamples=used, clusters=len(clusters))


def _why_undefined(pairs: Sequence[Pair]) -> str:
    if not pairs:
        return "nothing to compare"
    seen = {value for pair in pairs for value in pair}
    if len(seen) == 1:
        (only,) = seen
        said = {True: "pass", False: "fail"}.get(only, str(only))  # type: ignore[call-overload]
        return f"every verdict and every label is {said}: agreement by chance is certain"
    return "agreement by chance is certain"


class Confusion(_Frozen):
    """People's labels (rows) against the judge's verdicts (columns), as counts."""

    fail_fail: int  # both say fail
    fail_pass: int  # people say fail, the judge passes: the judge is too lenient
    pass_fail: int  # people say pass, the judge fails: the judge is too strict
    pass_pass: int

    @property
    def people_passed(self) -> int:
        """Labels that say pass."""
        return self.pass_fail + self.pass_pass

    @property
    def people_failed(self) -> int:
        """Labels that say fail."""
        return self.fail_fail + self.fail_pass


def confusion(people: Sequence[bool], judge: Sequence[bool]) -> Confusion:
    """scikit-learn's confusion matrix of the verdicts (people as the truth)."""
    from sklearn.metrics import confusion_matrix

    if not people:
        return Confusion(fail_fail=0, fail_pass=0, pass_fail=0, pass_pass=0)
    matrix = confusion_matrix(list(people), list(judge), labels=list(_VERDICTS))
    (ff, fp), (pf, pp) = matrix.tolist()
    return Confusion(fail_fail=ff, fail_pass=fp, pass_fail=pf, pass_pass=pp)


def judge_rating(normalised_score: float) -> int:
    """A judge's score (higher is better, 0–1) on the 1–5 scale: fifths of the range."""
    return min(5, 1 + int(normalised_score * 5))


class RatingAgreement(_Frozen):
    """People's 1–5 ratings against the judge's score put on the same scale."""

    labels: int
    weighted_kappa: float | None  # quadratic weights (scikit-learn)
    alpha: float | None  # Krippendorff's alpha, ordinal


def alpha(reliability: list[list[float]], level: Literal["nominal", "ordinal"]) -> float | None:
    """``krippendorff``'s alpha of a raters × units matrix (NaN: not rated); None if undefined."""
    import krippendorff

    data = np.array(reliability, dtype=float)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    except ValueError:  # one value in the whole domain: nothing to tell apart
        return None
    return None if np.isnan(value) else float(value)


def rating_agreement(people: Sequence[int], judge: Sequence[int]) -> RatingAgreement | None:
    """Weighted kappa and ordinal alpha of the ratings (None: no rating given)."""
    if not people:
        return None
    return RatingAgreement(
        labels=len(people),
        weighted_kappa=kappa(people, judge, RATING_SCALE, weights="quadratic"),
        alpha=alpha([list(map(float, people)), list(map(float, judge))], "ordinal"),
    )


class ReviewerAgreement(_Frozen):
    """People's agreement with each other on the runs two or more of them labelled.

    The ceiling a judge can be held to: a judge cannot be asked to agree with people more
    than they agree among themselves.
    """

    runs: int  # runs labelled by two or more reviewers
    reviewers: int
    raw_agreement: float  # share of those runs on which every reviewer gave one verdict
    alpha: float | None  # Krippendorff's alpha, nominal, over every reviewer
    kappa: KappaEstimate | None  # Cohen's kappa, when exactly two reviewers overlap


def reviewer_agreement(labels: Sequence[JudgedLabel]) -> ReviewerAgreement | None:
    """Agreement among the reviewers of one metric (None: no run has two verdicts)."""
    by_run: dict[str, dict[str, bool]] = defaultdict(dict)
    cluster_of: dict[str, str] = {}
    for label in labels:
        if label.passed is not None:
            by_run[label.run_id][label.reviewer] = label.passed
            cluster_of[label.run_id] = label.cluster
    shared = {run: verdicts for run, verdicts in by_run.items() if len(verdicts) >= 2}
    if not shared:
        return None
    reviewers = sorted({name for verdicts in shared.values() for name in verdicts})
    runs = sorted(shared)
    matrix = [
        [float(shared[run][name]) if name in shared[run] else np.nan for run in runs]
        for name in reviewers
    ]
    agreeing = sum(1 for run in runs if len(set(shared[run].values())) == 1)
    pairwise = None
    if len(reviewers) == 2:
        first, second = reviewers
        clusters: dict[str, list[Pair]] = defaultdict(list)
        for run in runs:
            if first in shared[run] and second in shared[run]:
                clusters[cluster_of[run]].append((shared[run][first], shared[run][second]))
        pairwise = kappa_estimate([clusters[key] for key in sorted(clusters)])
    return ReviewerAgreement(
        runs=len(runs),
        reviewers=len(reviewers),
        raw_agreement=agreeing / len(runs),
        alpha=alpha(matrix, "nominal"),
        kappa=pairwise,
    )


class MetricAgreement(_Frozen):
    """One metric: how its judge's verdicts agree with people's labels."""

    metric: str
    labels: int  # labels set beside a judged verdict
    runs: int
    clusters: int  # dataset rows (online items) those runs answer
    reviewers: tuple[str, ...]
    raw_agreement: float | None
    kappa: KappaEstimate
    confusion: Confusion
    ratings: RatingAgreement | None
    between_reviewers: ReviewerAgreement | None
    left_out: dict[str, int]  # labels not compared, by why: no_verdict, judge_error, dry_run


def metric_agreement(metric: str, labels: Sequence[JudgedLabel]) -> MetricAgreement:
    """The agreement of one metric's judge with its labels (``labels`` are that metric's)."""
    labels = sorted(labels, key=lambda label: (label.run_id, label.reviewer))  # one order, one CI
    compared = [label for label in labels if label.left_out is None]
    left_out: dict[str, int] = defaultdict(int)
    for label in labels:
        if label.left_out is not None:
            left_out[label.left_out] += 1
    clusters: dict[str, list[Pair]] = defaultdict(list)
    for label in compared:
        clusters[label.cluster].append((bool(label.passed), label.judge_passed))
    people = [bool(label.passed) for label in compared]
    judge = [label.judge_passed for label in compared]
    rated = [label for label in labels if label.rating is not None and label.score is not None]
    rated = [label for label in rated if not label.dry_run and label.error_kind is None]
    return MetricAgreement(
        metric=metric,
        labels=len(compared),
        runs=len({label.run_id for label in compared}),
        clusters=len(clusters),
        reviewers=tuple(sorted({label.reviewer for label in labels})),
        raw_agreement=(
            sum(a == b for a, b in zip(people, judge, strict=True)) / len(compared)
            if compared
            else None
        ),
        kappa=kappa_estimate([clusters[key] for key in sorted(clusters)]),
        confusion=confusion(people, judge),
        ratings=rating_agreement(
            [int(label.rating or 0) for label in rated],
            [judge_rating(_normalised(label)) for label in rated],
        ),
        between_reviewers=reviewer_agreement(labels),
        left_out=dict(left_out),
    )


def _normalised(label: JudgedLabel) -> float:
    score: Any = label.score
    return float(score) if label.direction == "higher_is_better" else 1.0 - float(score)
