"""The threshold at which a metric's scores agree best with people's labels.

Every cut between two neighbouring scores of the labelled runs is a candidate (its midpoint,
so the threshold does not sit on a score); the one with the highest Cohen's kappa wins,
the one nearest the configured threshold among equals. How well that choice carries to runs
it was not fitted on is cross-validated: folds of whole dataset rows (scikit-learn's
``GroupKFold``), a threshold fitted on the other folds applied to each, and kappa over
every held-out verdict. The metric's direction holds throughout: a lower-is-better
metric passes at or below its threshold. ``strictMode`` pins the threshold (1, or 0), so
a strict metric's fit is shown but cannot be adopted without turning strict mode off.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.calibration.agreement import kappa
from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.statistics.pass_direction import Direction, passes

MAX_FOLDS = 5
MIN_PER_VERDICT = 10
"""Labels of each verdict a fit needs before it may be adopted: fewer, and a threshold fitted
to a handful of fails (or passes) is chance as often as not."""
_DECIMALS = 4


class FittedThreshold(BaseModel):
    """A metric's configured threshold beside the one its labels point to."""

    model_config = ConfigDict(frozen=True)

    metric: str
    direction: Direction
    configured: float  # the threshold the metric passes at now (strictMode's pin included)
    strict_mode: bool
    configured_kappa: float | None  # kappa of the verdicts at the configured threshold
    fitted: float | None  # None: kappa is undefined at every candidate
    fitted_kappa: float | None  # on the labels it was fitted on (optimistic)
    cross_validated_kappa: float | None  # on held-out rows: what to expect on new runs
    folds: int  # 0: too few dataset rows to cross-validate
    labels: int
    fewer_verdict: int  # labels of the rarer verdict (pass or fail)

    @property
    def refusal(self) -> str | None:
        """Why the benchmark file may not take the fitted threshold (None: it may)."""
        if self.strict_mode:
            return "strictMode pins the threshold"
        if self.fitted is None or self.fitted_kappa is None:
            return "kappa is undefined at every threshold"
        if self.fewer_verdict < MIN_PER_VERDICT:
            return (
                f"{self.fewer_verdict} labels of the rarer verdict: at least "
                f"{MIN_PER_VERDICT} of each are needed"
            )
        if self.configured_kappa is not None and self.fitted_kappa <= self.configured_kappa:
            return "it agrees no better with the labels than the configured one"
        return None

    @property
    def adoptable(self) -> bool:
        """Whether the benchmark file may take the fitted threshold."""
        return self.refusal is None


def _verdicts(scores: Sequence[float], threshold: float, direction: Direction) -> list[bool]:
    return [passes(score, threshold, direction) for score in scores]


def candidates(scores: Sequence[float]) -> list[float]:
    """Thresholds that split the scores every way they can be split, within [0, 1]."""
    distinct = sorted(set(scores))
    cuts = [distinct[0]] + [_rounded_between(low, high) for low, high in pairwise(distinct)]
    cuts.append(distinct[-1])
    return sorted(set(cuts))


def _rounded_between(low: float, high: float) -> float:
    middle = (low + high) / 2
    rounded = round(middle, _DECIMALS)
    return rounded if low < rounded < high else middle


def best_threshold(
    scores: Sequence[float], people: Sequence[bool], direction: Direction, configured: float
) -> tuple[float | None, float | None]:
    """The candidate threshold with the highest kappa (nearest ``configured`` among equals)."""
    best: tuple[float, float] | None = None
    for threshold in candidates(scores):
        value = kappa(people, _verdicts(scores, threshold, direction))
        if value is None:
            continue
        if (
            best is None
            or value > best[0] + 1e-12
            or (
                abs(value - best[0]) <= 1e-12
                and abs(threshold - configured) < abs(best[1] - configured)
            )
        ):
            best = (value, threshold)
    return (None, None) if best is None else (best[1], best[0])


def cross_validated_kappa(
    scores: Sequence[float],
    people: Sequence[bool],
    clusters: Sequence[str],
    direction: Direction,
    configured: float,
) -> tuple[float | None, int]:
    """Kappa of held-out verdicts, each fold's threshold fitted on the other folds."""
    from sklearn.model_selection import GroupKFold

    folds = min(MAX_FOLDS, len(set(clusters)))
    if folds < 2:
        return None, 0
    held_out: list[bool] = []
    truth: list[bool] = []
    for train, test in GroupKFold(n_splits=folds).split(scores, people, groups=clusters):
        fitted, _ = best_threshold(
            [scores[i] for i in train], [people[i] for i in train], direction, configured
        )
        threshold = configured if fitted is None else fitted
        held_out += _verdicts([scores[i] for i in test], threshold, direction)
        truth += [people[i] for i in test]
    return kappa(truth, held_out), folds


def fit_threshold(
    metric: str,
    labels: Sequence[JudgedLabel],
    configured: float,
    strict_mode: bool,
    direction: Direction,
) -> FittedThreshold | None:
    """The fitted threshold of one metric from its labels (None: no labelled score)."""
    compared = [label for label in labels if label.left_out is None and label.score is not None]
    if not compared:
        return None
    scores = [float(label.score or 0.0) for label in compared]
    people = [bool(label.passed) for label in compared]
    fitted, fitted_kappa = best_threshold(scores, people, direction, configured)
    cross_validated, folds = cross_validated_kappa(
        scores, people, [label.cluster for label in compared], direction, configured
    )
    return FittedThreshold(
        metric=metric,
        direction=direction,
        configured=configured,
        strict_mode=strict_mode,
        configured_kappa=kappa(people, _verdicts(scores, configured, direction)),
        fitted=fitted,
        fitted_kappa=fitted_kappa,
        cross_validated_kappa=cross_validated,
        folds=folds,
        labels=len(compared),
        fewer_verdict=min(sum(people), len(people) - sum(people)),
    )
