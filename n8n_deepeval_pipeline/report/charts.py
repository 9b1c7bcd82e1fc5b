"""The report's charts as inline SVG, drawn here so that the page needs no script or network.

Every text that comes from the benchmark goes through ``Markup.format``, which escapes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from n8n_deepeval_pipeline.report.formatting import interval, percent
from n8n_deepeval_pipeline.statistics.version_comparison import OverallPassRate

CANDIDATE = "#2563eb"
BASELINE = "#94a3b8"
THRESHOLD = "#ea580c"
TRACK = "#eef2f7"
INK = "#334155"
MUTED = "#64748b"


def _svg(width: int, height: int, title: str, body: Markup, kind: str = "chart") -> Markup:
    return Markup(
        '<svg class="{k}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        'aria-label="{t}"><title>{t}</title>{body}</svg>'
    ).format(k=kind, w=width, h=height, t=title, body=body)


def _text(x: float, y: float, text: str, anchor: str = "start", **style: str) -> Markup:
    attributes = Markup("").join(
        Markup(' {}="{}"').format(name.replace("_", "-"), value) for name, value in style.items()
    )
    return Markup('<text x="{:.1f}" y="{:.1f}" text-anchor="{}"{}>{}</text>').format(
        x, y, anchor, attributes, text
    )


def _rect(x: float, y: float, width: float, height: float, fill: str) -> Markup:
    return Markup(
        '<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" rx="3" fill="{}"/>'
    ).format(x, y, max(width, 0.0), height, fill)


def rate_strip(rate: float | None, baseline: float | None = None) -> Markup:
    """A rate as a short bar for a table cell; ``baseline``'s rate as a tick across it."""
    width, height, bar = 120, 14, 8
    body = _rect(0, 3, width, bar, TRACK) + _rect(0, 3, width * (rate or 0.0), bar, CANDIDATE)
    if baseline is not None:
        x = min(max(width * baseline, 1.0), width - 1.0)
        body += Markup(
            '<line x1="{0:.1f}" x2="{0:.1f}" y1="0" y2="{1}" stroke="{2}" stroke-width="2"/>'
        ).format(x, height, INK)
    title = percent(rate) + ("" if baseline is None else f", baseline {percent(baseline)}")
    return _svg(width, height, title, body, kind="strip")


def interval_chart(rows: Sequence[tuple[str, OverallPassRate]], title: str) -> Markup:
    """Each version's pass rate as a dot on its Wilson 95% interval, on a 0–100% axis."""
    width = 640  # half a page: it stands beside the verdicts
    step, top, left, right = 34, 24, 90, width - 200

    def x(rate: float) -> float:
        return left + (right - left) * rate

    axis = Markup("").join(
        Markup('<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="{3}"/>').format(
            x(tick), top - 6, top + len(rows) * step - 8, TRACK
        )
        + _text(x(tick), top - 10, f"{tick:.0%}", "middle", fill=MUTED, font_size="11")
        for tick in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    marks = []
    for i, (label, rate) in enumerate(rows):
        y = top + 10 + i * step
        colour = CANDIDATE if i == len(rows) - 1 else BASELINE
        marks.append(_text(0, y + 4, label, fill=INK, font_size="13"))
        if rate.interval is not None and rate.rate is not None:
            marks.append(
                Markup(
                    '<line x1="{:.1f}" x2="{:.1f}" y1="{y}" y2="{y}" stroke="{c}" '
                    'stroke-width="4" stroke-linecap="round"/>'
                    '<circle cx="{:.1f}" cy="{y}" r="6" fill="{c}"/>'
                ).format(
                    x(rate.interval.lower), x(rate.interval.upper), x(rate.rate), y=y, c=colour
                )
            )
        caption = f"{percent(rate.rate)}  (95% CI {interval(rate.interval)})"
        marks.append(_text(right + 14, y + 4, caption, fill=INK, font_size="12"))
    return _svg(width, top + len(rows) * step, title, axis + Markup("").join(marks))


def histogram(bins: Sequence[int], threshold: float, title: str) -> Markup:
    """Counts of scores in equal bins over [0, 1], with the metric's threshold marked."""
    width, height, left, right, top, bottom = 260, 128, 8, 252, 20, 100
    tallest, step = max(bins, default=0) or 1, (right - left) / len(bins)
    heights = [(bottom - top) * n / tallest for n in bins]
    bars = Markup("").join(
        _rect(left + i * step + 1, bottom - tall, step - 2, tall, CANDIDATE)
        for i, tall in enumerate(heights)
        if tall
    )
    marker = left + (right - left) * min(max(threshold, 0.0), 1.0)
    frame = Markup(
        '<line x1="{l}" x2="{r}" y1="{b}" y2="{b}" stroke="{ink}"/>'
        '<line x1="{m:.1f}" x2="{m:.1f}" y1="{t}" y2="{b}" stroke="{th}" stroke-width="1.5" '
        'stroke-dasharray="4 3"/>'
    ).format(l=left, r=right, b=bottom, t=top - 4, m=marker, ink=MUTED, th=THRESHOLD)
    labels = Markup("").join(
        _text(
            left + (right - left) * tick, bottom + 15, label, "middle", fill=MUTED, font_size="11"
        )
        for tick, label in ((0.0, "0"), (0.5, "0.5"), (1.0, "1"))
    )
    labels += _text(left, top - 8, f"{sum(bins)} scores", fill=MUTED, font_size="11")
    labels += _text(
        right, top - 8, f"threshold {threshold:g}", "end", fill=THRESHOLD, font_size="11"
    )
    return _svg(width, height, title, bars + frame + labels)
