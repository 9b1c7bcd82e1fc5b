"""Whether each judge-backed metric is calibrated, and which of them may decide runs.

Only metrics that call a judge are calibrated (a deterministic score has no judge to
doubt). A metric is *calibrated* when it has at least ``minLabels`` labels set beside
its judge's verdicts and the lower bound of kappa's 95% interval is at least
``minKappa``; otherwise it is *uncalibrated*, and says why: too few labels (how many
more), kappa undefined, or its interval reaching below ``minKappa``. With
``calibration.gate`` on, an uncalibrated metric decides no run and no regression: it is
left out of the metrics the pass rule counts, as a dry-run placeholder is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.benchmark.calibration import CalibrationConfig
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.agreement import MetricAgreement, metric_agreement
from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.metrics.catalog import entry_for

CalibrationState = Literal["calibrated", "uncalibrated", "too_few_labels"]


class MetricCalibration(BaseModel):
    """One judge-backed metric's standing with people."""

    model_config = ConfigDict(frozen=True)

    metric: str
    state: CalibrationState
    labels: int  # labels set beside a judged verdict
    needed: int  # more labels before agreement is measured (0: enough)
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    min_kappa: float
    gated: bool  # the gate is on, the pass rule counts it, it is not calibrated: it decides no run
    why: str

    @property
    def calibrated(self) -> bool:
        """Whether people's labels back the judge's verdicts."""
        return self.state == "calibrated"


def _figure(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def metric_calibration(
    agreement: MetricAgreement, config: CalibrationConfig, gate: bool
) -> MetricCalibration:
    """The standing of one metric from its agreement with people."""
    estimate = agreement.kappa
    needed = max(0, config.min_labels - agreement.labels)
    if needed:
        state: CalibrationState = "too_few_labels"
        why = (
            f"{agreement.labels} of {config.min_labels} labels (calibration.minLabels): "
            f"{needed} more needed"
        )
    elif estimate.kappa is None:
        state, why = "uncalibrated", f"kappa is undefined: {estimate.undefined}"
    elif not (agreement.confusion.people_passed and agreement.confusion.people_failed):
        said = "pass" if agreement.confusion.people_passed else "fail"
        state = "uncalibrated"
        why = (
            f"every label says {said}: kappa cannot rise above 0 until people label runs "
            f"that {'fail' if said == 'pass' else 'pass'} too"
        )
    elif estimate.low is None or estimate.low < config.min_kappa:
        state = "uncalibrated"
        why = (
            f"kappa {_figure(estimate.kappa)} [{_figure(estimate.low)}, "
            f"{_figure(estimate.high)}]: the interval reaches below minKappa {config.min_kappa}"
        )
    else:
        state = "calibrated"
        why = (
            f"kappa {_figure(estimate.kappa)} [{_figure(estimate.low)}, "
            f"{_figure(estimate.high)}] over {agreement.labels} labels"
        )
    return MetricCalibration(
        metric=agreement.metric,
        state=state,
        labels=agreement.labels,
        needed=needed,
        kappa=estimate.kappa,
        kappa_low=estimate.low,
        kappa_high=estimate.high,
        min_kappa=config.min_kappa,
        gated=gate and state != "calibrated",
        why=why,
    )


def judged_metrics(benchmark: Benchmark) -> list[str]:
    """The benchmark's metrics that call a judge (the ones calibrated), in file order."""
    return [
        metric.result_label()
        for metric in benchmark.metrics
        if entry_for(metric).needs_judge and not entry_for(metric).head_to_head
    ]


class UnknownMetricError(ValueError):
    """A metric asked for review that the benchmark does not have."""


def metrics_to_review(benchmark: Benchmark, named: Sequence[str]) -> list[str]:
    """The metrics a review asks about: those named, or every one that calls a judge.

    UnknownMetricError names the first that is not the benchmark's; each surface says
    which of its fields gave it.
    """
    if not named:
        return judged_metrics(benchmark)
    unknown = [name for name in named if name not in benchmark.metric_labels]
    if unknown:
        raise UnknownMetricError(
            f"{unknown[0]!r} is not one of the benchmark's metrics "
            f"({', '.join(benchmark.metric_labels)})"
        )
    return list(named)


def by_metric(labels: Iterable[JudgedLabel]) -> dict[str, list[JudgedLabel]]:
    """Labels grouped by metric."""
    grouped: dict[str, list[JudgedLabel]] = defaultdict(list)
    for label in labels:
        grouped[label.metric].append(label)
    return grouped


def agreements(benchmark: Benchmark, labels: Sequence[JudgedLabel]) -> list[MetricAgreement]:
    """Each labelled metric's agreement, in the benchmark's order, judged metrics first.

    A judge-backed metric without any label is there too (with nothing to compare); the
    red team's vulnerabilities (``red_team:…``) come last.
    """
    grouped = by_metric(labels)
    judged = judged_metrics(benchmark)
    order = list(dict.fromkeys(judged + benchmark.metric_labels + sorted(grouped)))
    return [
        metric_agreement(metric, grouped.get(metric, []))
        for metric in order
        if metric in grouped or metric in judged
    ]


def config_of(benchmark: Benchmark) -> CalibrationConfig:
    """The benchmark's calibration section, or its defaults (never a gate) when it has none."""
    return benchmark.calibration or CalibrationConfig()


def calibrations(
    benchmark: Benchmark, measured: Sequence[MetricAgreement]
) -> list[MetricCalibration]:
    """The standing of every judge-backed metric, from the agreements measured."""
    config = config_of(benchmark)
    judged = set(judged_metrics(benchmark))
    counted = set(benchmark.counted_labels)  # the gate keeps out only what would decide
    return [
        metric_calibration(agreement, config, config.gate and agreement.metric in counted)
        for agreement in measured
        if agreement.metric in judged
    ]


def gated_metrics(
    benchmark: Benchmark, read_labels: Callable[[], Sequence[JudgedLabel]]
) -> frozenset[str]:
    """What ``calibration.gate`` keeps from deciding (empty without the gate).

    ``read_labels`` is called only when the gate is on: without it (the common case) no
    label is read and no agreement measured. Only the judge-backed metrics' agreements are
    measured: the others are never gated.
    """
    if benchmark.calibration is None or not benchmark.calibration.gate:
        return frozenset()
    judged = set(judged_metrics(benchmark))
    labels = [label for label in read_labels() if label.metric in judged]
    standings = calibrations(benchmark, agreements(benchmark, labels))
    return frozenset(standing.metric for standing in standings if standing.gated)
