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

_WIDTH = 1000
_LABEL_WIDTH = 200
_VALUE_WIDTH = 70
_BAR_WIDTH = _WIDTH - _LABEL_WIDTH - _VALUE_WIDTH
_LABEL_CHARS = 28


def _svg(width: int, height: int, title: str, body: Markup) -> Markup:
    return Markup(
        '<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        'aria-label="{t}"><title>{t}</title>{body}</svg>'
    ).format(w=width, h=height, t=title, body=body)


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


def _label(x: float, y: float, label: str) -> Markup:
    """A row label, shortened to fit its column; the full label shows on hover."""
    shown = label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"
    return Markup("<g><title>{}</title>{}</g>").format(
        label, _text(x, y, shown, fill=INK, font_size="13")
    )


def _bar_row(y: float, rate: float | None, colour: str, height: float) -> Markup:
    return Markup("").join(
        [
            _rect(_LABEL_WIDTH, y, _BAR_WIDTH, height, TRACK),
            _rect(_LABEL_WIDTH, y, _BAR_WIDTH * (rate or 0.0), height, colour),
            _text(_WIDTH - 4, y + height - 3, percent(rate), "end", fill=INK, font_size="12"),
        ]
    )


def rate_bars(rows: Sequence[tuple[str, float | None]], title: str) -> Markup:
    """One horizontal bar per label: its rate out of 100%."""
    step = 28
    body = Markup("").join(
        _label(0, 18 + i * step, label) + _bar_row(5 + i * step, rate, CANDIDATE, 17)
        for i, (label, rate) in enumerate(rows)
    )
    return _svg(_WIDTH, 8 + len(rows) * step, title, body)


def _legend(y: float) -> Markup:
    return Markup("").join(
        [
            _rect(_LABEL_WIDTH, y - 10, 12, 12, BASELINE),
            _text(_LABEL_WIDTH + 18, y, "baseline", fill=MUTED, font_size="12"),
            _rect(_LABEL_WIDTH + 100, y - 10, 12, 12, CANDIDATE),
            _text(_LABEL_WIDTH + 118, y, "candidate", fill=MUTED, font_size="12"),
        ]
    )


def paired_rate_bars(rows: Sequence[tuple[str, float | None, float | None]], title: str) -> Markup:
    """Two bars per label, the baseline's rate above the candidate's."""
    step, top = 40, 26
    body = _legend(14) + Markup("").join(
        _label(0, top + 22 + i * step, label)
        + _bar_row(top + 4 + i * step, baseline, BASELINE, 13)
        + _bar_row(top + 19 + i * step, candidate, CANDIDATE, 13)
        for i, (label, baseline, candidate) in enumerate(rows)
    )
    return _svg(_WIDTH, top + 8 + len(rows) * step, title, body)


def interval_chart(rows: Sequence[tuple[str, OverallPassRate]], title: str) -> Markup:
    """Each version's pass rate as a dot on its Wilson 95% interval, on a 0–100% axis."""
    step, top, left, right = 34, 24, 110, _WIDTH - 240

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
    return _svg(_WIDTH, top + len(rows) * step, title, axis + Markup("").join(marks))


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
