"""A benchmark's calibration measured from its labels, and the table ``calibration`` prints.

Per metric: the labels set beside the judge's verdicts, raw agreement, Cohen's kappa with
its 95% interval, the confusion matrix, the ratings' agreement, the reviewers' agreement
with each other, the standing (calibrated or not, and why), and the threshold the labels
point to beside the configured one.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.benchmark.calibration import CalibrationConfig
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.agreement import (
    BOOTSTRAP_RESAMPLES,
    MetricAgreement,
)
from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.calibration.status import (
    MetricCalibration,
    agreements,
    by_metric,
    calibrations,
    config_of,
)
from n8n_deepeval_pipeline.calibration.thresholds import FittedThreshold, fit_threshold
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.statistics.pass_direction import effective_threshold


class Calibration(BaseModel):
    """Everything measured of a benchmark's judges against people's labels."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    config: CalibrationConfig
    configured: bool  # the benchmark has a calibration section (else its defaults are shown)
    labels: int  # every label stored, compared or not
    reviewers: tuple[str, ...]
    metrics: tuple[MetricAgreement, ...]
    standings: tuple[MetricCalibration, ...]
    thresholds: tuple[FittedThreshold, ...]
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES

    def standing(self, metric: str) -> MetricCalibration | None:
        """One metric's standing (None: it calls no judge, so it is not calibrated)."""
        return next((s for s in self.standings if s.metric == metric), None)

    def threshold(self, metric: str) -> FittedThreshold | None:
        """One metric's fitted threshold (None: none of its labels has a score)."""
        return next((t for t in self.thresholds if t.metric == metric), None)

    @property
    def gated(self) -> tuple[str, ...]:
        """The metrics that decide no run because they are uncalibrated (gate on)."""
        return tuple(standing.metric for standing in self.standings if standing.gated)


def fitted_thresholds(benchmark: Benchmark, labels: Sequence[JudgedLabel]) -> list[FittedThreshold]:
    """Each labelled metric's threshold fitted to people, in the benchmark's order."""
    grouped = by_metric(labels)
    fitted = []
    for config in benchmark.metrics:
        label = config.result_label()
        if label not in grouped:
            continue
        direction = entry_for(config).direction
        configured = effective_threshold(config.threshold, config.strict_mode, direction)
        found = fit_threshold(label, grouped[label], configured, config.strict_mode, direction)
        if found is not None:
            fitted.append(found)
    return fitted


def measure(
    benchmark: Benchmark, labels: Sequence[JudgedLabel], with_thresholds: bool = True
) -> Calibration:
    """The benchmark's calibration from every label set beside its judge's result."""
    measured = agreements(benchmark, labels)
    return Calibration(
        benchmark=benchmark.name,
        config=config_of(benchmark),
        configured=benchmark.calibration is not None,
        labels=len(labels),
        reviewers=tuple(sorted({label.reviewer for label in labels})),
        metrics=tuple(measured),
        standings=tuple(calibrations(benchmark, measured)),
        thresholds=tuple(fitted_thresholds(benchmark, labels) if with_thresholds else ()),
    )


def _figure(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"


def render_calibration(calibration: Calibration) -> str:
    """The calibration as the terminal shows it."""
    config = calibration.config
    settings = (
        f"minKappa {config.min_kappa} · minLabels {config.min_labels} · "
        f"gate {'on' if config.gate else 'off'}"
    )
    if not calibration.configured:
        settings += " (no calibration section: its defaults, nothing gated)"
    lines = [
        f"calibration of {calibration.benchmark} · {calibration.labels} labels by "
        f"{len(calibration.reviewers)} reviewer(s) · {settings}",
    ]
    if not calibration.metrics:
        return "\n".join([*lines, "no label yet: `n8n-deepeval labels export` or `review`"])
    width = max(len("metric"), *(len(metric.metric) for metric in calibration.metrics))
    lines += [
        "",
        f"{'metric':<{width}}  labels  agree  kappa  95% interval    "
        "confusion (people×judge: ff fp pf pp)  standing",
    ]
    for metric in calibration.metrics:
        standing = calibration.standing(metric.metric)
        matrix = metric.confusion
        cells = f"{matrix.fail_fail} {matrix.fail_pass} {matrix.pass_fail} {matrix.pass_pass}"
        said = "no judge" if standing is None else standing.state.replace("_", " ")
        if standing is not None and standing.gated:
            said += ", decides no run"
        interval = _interval(metric.kappa.low, metric.kappa.high)
        lines.append(
            f"{metric.metric:<{width}}  {metric.labels:>6}  {_figure(metric.raw_agreement):>5}  "
            f"{_figure(metric.kappa.kappa):>5}  {interval:<14}  {cells:<37}  {said}"
        )
    lines += _why_lines(calibration)
    lines += _rating_lines(calibration.metrics)
    lines += _reviewer_lines(calibration.metrics)
    lines += _threshold_lines(calibration.thresholds)
    lines.append(
        f"\nkappa's interval: percentile bootstrap, {calibration.bootstrap_resamples} resamples "
        "of dataset rows (a row's repeated runs are not independent)"
    )
    return "\n".join(lines)


def _why_lines(calibration: Calibration) -> list[str]:
    lines = [f"  {s.metric}: {s.why}" for s in calibration.standings if not s.calibrated]
    left = [
        f"  {metric.metric}: " + ", ".join(f"{why} {n}" for why, n in metric.left_out.items())
        for metric in calibration.metrics
        if metric.left_out
    ]
    if left:
        lines += ["labels not compared (no_verdict: a rating of 3; judge_error; dry_run):", *left]
    return ([""] if lines else []) + lines


def _rating_lines(metrics: Sequence[MetricAgreement]) -> list[str]:
    rated = [metric for metric in metrics if metric.ratings is not None]
    if not rated:
        return []
    lines = ["", "ratings (1–5) against the judge's score in fifths:"]
    for metric in rated:
        assert metric.ratings is not None
        lines.append(
            f"  {metric.metric}: {metric.ratings.labels} ratings · weighted kappa "
            f"{_figure(metric.ratings.weighted_kappa)} · Krippendorff's alpha "
            f"{_figure(metric.ratings.alpha)}"
        )
    return lines


def _reviewer_lines(metrics: Sequence[MetricAgreement]) -> list[str]:
    shared = [metric for metric in metrics if metric.between_reviewers is not None]
    if not shared:
        return []
    lines = ["", "reviewers with each other (the ceiling a judge can be held to):"]
    for metric in shared:
        between = metric.between_reviewers
        assert between is not None
        pairwise = (
            f" · kappa {_figure(between.kappa.kappa)} "
            f"{_interval(between.kappa.low, between.kappa.high)}"
            if between.kappa is not None
            else ""
        )
        lines.append(
            f"  {metric.metric}: {between.runs} runs by {between.reviewers} reviewers · agree "
            f"{_figure(between.raw_agreement)} · alpha {_figure(between.alpha)}{pairwise}"
        )
    return lines


def _threshold_lines(thresholds: Sequence[FittedThreshold]) -> list[str]:
    if not thresholds:
        return []
    width = max(len("metric"), *(len(fit.metric) for fit in thresholds))
    lines = [
        "",
        f"{'metric':<{width}}  threshold  kappa  fitted  kappa  cross-validated  direction",
    ]
    for fit in thresholds:
        note = "  (--adopt takes it)" if fit.adoptable else f"  (not adoptable: {fit.refusal})"
        lines.append(
            f"{fit.metric:<{width}}  {fit.configured:>9.4g}  {_figure(fit.configured_kappa):>5}  "
            f"{_figure(fit.fitted, 4):>6}  {_figure(fit.fitted_kappa):>5}  "
            f"{_figure(fit.cross_validated_kappa):>9} ({fit.folds} folds)  {fit.direction}{note}"
        )
    return lines
