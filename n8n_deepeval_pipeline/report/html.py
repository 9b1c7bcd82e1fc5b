"""The report as one self-contained HTML page: inline CSS and SVG, no script, no fetch."""

from __future__ import annotations

from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from n8n_deepeval_pipeline.report import formatting
from n8n_deepeval_pipeline.report.charts import (
    histogram,
    interval_chart,
    paired_rate_bars,
    rate_bars,
)
from n8n_deepeval_pipeline.report.gate_status import (
    gate_status,
    incomplete_run,
    unjudged_within_limit,
)
from n8n_deepeval_pipeline.report.model import ComparisonReport, MetricRow, Report
from n8n_deepeval_pipeline.report.verdicts import GUIDANCE, is_flagged
from n8n_deepeval_pipeline.statistics.gates import fails_gate

_ENVIRONMENT = Environment(
    loader=PackageLoader("n8n_deepeval_pipeline.report"),
    autoescape=True,  # outputs, reasons and ids are the benchmark's text, never markup
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENVIRONMENT.filters.update(
    percent=formatting.percent,
    figure=formatting.figure,
    signed_figure=formatting.signed_figure,
    points=formatting.points,
    p_value=formatting.p_value,
    interval=formatting.interval,
    fraction=formatting.fraction,
    money=formatting.money,
    thousands=formatting.thousands,
    short_hash=formatting.short_hash,
)
_ENVIRONMENT.tests.update(flagged=is_flagged, failing_gate=fails_gate)
_ENVIRONMENT.globals.update(
    gate_status=gate_status,
    guidance=GUIDANCE,
    incomplete_run=incomplete_run,
    unjudged_within_limit=unjudged_within_limit,
)


@dataclass(frozen=True)
class _Charts:
    pass_rates: Markup
    histograms: tuple[tuple[MetricRow, Markup], ...]
    overall: Markup | None
    metric_pass_rates: Markup | None


def _comparison_charts(comparison: ComparisonReport) -> tuple[Markup, Markup]:
    result = comparison.result
    overall = interval_chart(
        [("baseline", result.baseline_overall), ("candidate", result.candidate_overall)],
        "Pass rate over the cases both versions have, with 95% intervals",
    )
    per_metric = paired_rate_bars(
        [
            (delta.metric, delta.baseline.pass_rate, delta.candidate.pass_rate)
            for delta in result.metric_deltas
        ],
        "Pass rate per metric, baseline and candidate",
    )
    return overall, per_metric


def _charts(report: Report) -> _Charts:
    overall, per_metric = (
        _comparison_charts(report.comparison) if report.comparison else (None, None)
    )
    return _Charts(
        pass_rates=rate_bars(
            [(metric.metric, metric.pass_rate) for metric in report.metrics],
            "Pass rate per metric",
        ),
        histograms=tuple(
            (
                metric,
                histogram(
                    metric.score_bins, metric.threshold, f"Scores of {metric.metric} over [0, 1]"
                ),
            )
            for metric in report.metrics
        ),
        overall=overall,
        metric_pass_rates=per_metric,
    )


def render_html(report: Report) -> str:
    """The report page; it loads nothing, so it opens the same from a CI artifact or a mail."""
    template = _ENVIRONMENT.get_template("report.html.j2")
    return template.render(report=report, charts=_charts(report))
