"""The report's variants: how they read, and the chart of cost per run against pass rate.

One point per version of the workflow (the workflow itself and each variant) at its cost
per run and run pass rate, with the pass rate's Wilson 95% interval as a vertical bar;
the frontier (no other version costs less per run and passes more) drawn in the candidate
colour and joined, the others in the baseline's grey. A version without a price cannot be
placed: the chart names it under its axis rather than putting it at zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from markupsafe import Markup

from n8n_deepeval_pipeline.report.charts import (
    BASELINE,
    CANDIDATE,
    INK,
    MUTED,
    TRACK,
    _svg,
    _text,
)
from n8n_deepeval_pipeline.report.formatting import MISSING
from n8n_deepeval_pipeline.summary.variant_matrix import MatrixRow, VariantMatrix
from n8n_deepeval_pipeline.summary.workflow_usage import per_run_money

_WIDTH, _HEIGHT = 1000, 400
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 900, 44, 340


def cost_per_run(value: float | None) -> str:
    """A cost per run in US dollars to four significant digits: ``$0.000412``."""
    return MISSING if value is None else per_run_money(value)


def seconds(value: float | None) -> str:
    """A latency: ``1.24 s``."""
    return MISSING if value is None else f"{value:.2f} s"


def nice_top(largest: float) -> float:
    """The axis end: the smallest 1, 2, 2.5 or 5 × 10ⁿ at or above ``largest``."""
    if largest <= 0:
        return 1e-6
    scale = 10.0 ** math.floor(math.log10(largest))
    return next(scale * step for step in (1.0, 2.0, 2.5, 5.0, 10.0) if scale * step >= largest)


def _ticks(top: float) -> list[float]:
    return [top * step / 4 for step in range(5)]


def frontier_chart(matrix: VariantMatrix) -> Markup:
    """Cost per run (x) against pass rate (y), a point per priced version with its interval."""
    placed = [row for row in matrix.rows if row.cost_per_run_usd is not None]
    top = nice_top(max((row.cost_per_run_usd or 0.0 for row in placed), default=0.0))

    def x(cost: float) -> float:
        return _LEFT + (_RIGHT - _LEFT) * cost / top

    def y(rate: float) -> float:
        return _BOTTOM - (_BOTTOM - _TOP) * rate

    grid = Markup("").join(
        Markup('<line x1="{l}" x2="{r}" y1="{y:.1f}" y2="{y:.1f}" stroke="{c}"/>').format(
            l=_LEFT, r=_RIGHT, y=y(rate), c=TRACK
        )
        + _text(_LEFT - 8, y(rate) + 4, f"{rate:.0%}", "end", fill=MUTED, font_size="11")
        for rate in (0.0, 0.25, 0.5, 0.75, 1.0)
    ) + Markup("").join(
        _text(x(cost), _BOTTOM + 18, cost_per_run(cost), "middle", fill=MUTED, font_size="11")
        for cost in _ticks(top)
    )
    axes = _text(
        (_LEFT + _RIGHT) / 2, _BOTTOM + 38, "cost per run (the workflow's own models)", "middle",
        fill=INK, font_size="12",
    ) + _text(14, 16, "run pass rate (95% CI)", fill=INK, font_size="12")  # fmt: skip
    frontier = sorted(
        (row for row in placed if row.frontier), key=lambda row: row.cost_per_run_usd or 0.0
    )
    line = Markup("")
    if len(frontier) > 1:
        path = " ".join(
            f"{x(row.cost_per_run_usd or 0.0):.1f},{y(row.pass_rate.rate or 0.0):.1f}"
            for row in frontier
        )
        line = Markup(
            '<polyline points="{}" fill="none" stroke="{}" stroke-width="1.5" '
            'stroke-dasharray="5 4"/>'
        ).format(path, CANDIDATE)
    marks = Markup("").join(_mark(row, x(row.cost_per_run_usd or 0.0), y) for row in placed)
    unplaced = [row.name for row in matrix.rows if row.cost_per_run_usd is None]
    said = f"not placed (no price for their models): {', '.join(unplaced)}"
    note = _text(_LEFT, _HEIGHT - 6, said, fill=MUTED, font_size="12") if unplaced else Markup("")
    title = "Cost per run against pass rate, one point per version, the frontier joined"
    return _svg(_WIDTH, _HEIGHT, title, grid + axes + line + marks + note)


def _mark(row: MatrixRow, cx: float, scale: Callable[[float], float]) -> Markup:
    """A version's point, its interval and its name (``scale``: a rate's y)."""
    rate = row.pass_rate
    colour = CANDIDATE if row.frontier else BASELINE
    parts = []
    if rate.interval is not None:
        parts.append(
            Markup(
                '<line x1="{x:.1f}" x2="{x:.1f}" y1="{lo:.1f}" y2="{hi:.1f}" stroke="{c}" '
                'stroke-width="3" stroke-linecap="round" opacity="0.55"/>'
            ).format(x=cx, lo=scale(rate.interval.lower), hi=scale(rate.interval.upper), c=colour)
        )
    if rate.rate is not None:
        cy = scale(rate.rate)
        ring = Markup(' stroke="{}" stroke-width="2.5"').format(INK) if row.name == "base" else ""
        parts.append(
            Markup('<circle cx="{:.1f}" cy="{:.1f}" r="7" fill="{}"{}/>').format(
                cx, cy, colour, ring
            )
        )
        label = f"{row.name} {rate.rate:.0%}"
        parts.append(_text(cx + 12, cy + 4, label, fill=INK, font_size="13", font_weight="600"))
    return Markup("<g><title>{}</title>{}</g>").format(
        f"{row.name}: {cost_per_run(row.cost_per_run_usd)} per run", Markup("").join(parts)
    )
