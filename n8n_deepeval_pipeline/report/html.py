"""The report as one HTML page: inline CSS and SVG, no script, no fetch.

The images runs show are files beside it (``images/``); a remote image is a link, never
fetched by the page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from n8n_deepeval_pipeline.n8n_data.images import MARKER
from n8n_deepeval_pipeline.report import formatting
from n8n_deepeval_pipeline.report.banners import outcome_banners, unjudged_within_limit
from n8n_deepeval_pipeline.report.cases import FIELD_LIMIT
from n8n_deepeval_pipeline.report.charts import histogram, interval_chart, rate_strip
from n8n_deepeval_pipeline.report.excerpt import Excerpt
from n8n_deepeval_pipeline.report.model import MetricRow, Report, ReportImage
from n8n_deepeval_pipeline.report.variant_charts import cost_per_run, frontier_chart, seconds
from n8n_deepeval_pipeline.report.verdicts import GUIDANCE, is_drop, is_flagged
from n8n_deepeval_pipeline.statistics.gates import fails_gate

_ENVIRONMENT = Environment(
    loader=PackageLoader("n8n_deepeval_pipeline.report"),
    autoescape=True,  # outputs, reasons and ids are the benchmark's text, never markup
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
# How the report writes its figures: the results workspace's pages write them the same way.
FILTERS: Mapping[str, Callable[..., object]] = MappingProxyType(
    dict(
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
        cost_per_run=cost_per_run,
        seconds=seconds,
        breakable=formatting.breakable,
        rate_strip=rate_strip,
        cut=Excerpt.of,  # a text kept whole in the report's data, its beginning on the page
    )
)


def with_images(text: str, images: dict[str, ReportImage]) -> Markup:
    """The text escaped, each image marker it holds shown as its image (or its link)."""
    parts: list[Markup] = []
    last = 0
    for match in MARKER.finditer(text):
        parts.append(Markup.escape(text[last : match.start()]))
        image = images.get(match[1])
        name = f"image {match[1][:12]}"
        if image is None:
            parts.append(Markup.escape(f"[{name}]"))
        elif image.remote:
            parts.append(Markup('<a class="image-link" href="{}">{}</a>').format(image.src, name))
        else:
            parts.append(Markup('<img class="image" src="{}" alt="{}">').format(image.src, name))
        last = match.end()
    parts.append(Markup.escape(text[last:]))
    return Markup("").join(parts)


TESTS: Mapping[str, Callable[..., bool]] = MappingProxyType(
    dict(flagged=is_flagged, drop=is_drop, failing_gate=fails_gate)
)
_ENVIRONMENT.filters.update(FILTERS, with_images=with_images)
_ENVIRONMENT.tests.update(TESTS)
_ENVIRONMENT.globals.update(
    turn_limit=FIELD_LIMIT,  # a conversation has many turns: each cut as an input is
    outcome_banners=outcome_banners,
    guidance=GUIDANCE,
    unjudged_within_limit=unjudged_within_limit,
)


@dataclass(frozen=True)
class _Charts:
    histograms: tuple[tuple[MetricRow, Markup], ...]
    overall: Markup | None
    frontier: Markup | None  # the variants' cost per run against pass rate


def _charts(report: Report) -> _Charts:
    overall = None
    if report.comparison:
        result = report.comparison.result
        overall = interval_chart(
            [("baseline", result.baseline_overall), ("candidate", result.candidate_overall)],
            "Pass rate over the cases both versions have, with 95% intervals",
        )
    return _Charts(
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
        frontier=frontier_chart(report.variants) if report.variants else None,
    )


def render_html(report: Report) -> str:
    """The report page; it loads nothing, so it opens the same from a CI artifact or a mail."""
    template = _ENVIRONMENT.get_template("report.html.j2")
    return template.render(report=report, charts=_charts(report))
