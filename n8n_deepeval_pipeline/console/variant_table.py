"""The matrix of a workflow and its variants as `compare --variants` (and `run`) print it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from n8n_deepeval_pipeline.statistics.version_comparison import OverallPassRate
from n8n_deepeval_pipeline.summary.variant_matrix import MatrixRow, MetricCell, VariantMatrix
from n8n_deepeval_pipeline.summary.workflow_usage import per_run_money
from n8n_deepeval_pipeline.workflow.hashing import version_key


def _table(rows: Sequence[Sequence[str]], numeric_from: int = 1) -> list[str]:
    """Columns padded to their widest cell; numbers right-aligned from ``numeric_from``."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if i >= numeric_from else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _rate(rate: OverallPassRate) -> str:
    if rate.rate is None or rate.interval is None:
        return "-"
    interval = f"[{rate.interval.lower:.1%}, {rate.interval.upper:.1%}]"
    return f"{rate.rate:.1%} {interval} {rate.passed}/{rate.runs}"


def _cell(cell: MetricCell) -> str:
    if cell.against is None:
        return "-" if cell.mean_score is None else f"{cell.mean_score:.3f}"
    if not cell.results or cell.pass_rate is None or cell.interval is None:
        return "-"
    interval = f"[{cell.interval.lower:.0%}, {cell.interval.upper:.0%}]"
    return f"{cell.pass_rate:.0%} {interval} {cell.wins}/{cell.results}"


def _money(value: float | None, row: MatrixRow) -> str:
    if value is None:
        return "unpriced" if row.measured_runs else "-"
    return per_run_money(value)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _heading(matrix: VariantMatrix, cell: MetricCell) -> str:
    return f"{cell.metric} (wins vs {cell.against})" if cell.against else cell.metric


def render_variant_matrix(matrix: VariantMatrix) -> str:
    """The matrix, then each variant's cases against the base."""
    rows = matrix.rows
    variants = len(rows) - 1
    on_frontier = [row.name for row in rows if row.frontier]
    frontier = (
        f"frontier (no other costs less per run and passes more): {', '.join(on_frontier)}"
        if matrix.priced
        else "frontier: none (no version's models have a price: set target.prices)"
    )
    lines = [
        f"{matrix.benchmark}: the workflow {version_key(matrix.base_hash)} and its "
        f"{variants} variant{'s' if variants != 1 else ''}",
        frontier,
        "",
    ]
    header = [
        "version",
        "key",
        "pass rate [95% CI]",
        *(_heading(matrix, cell) for cell in rows[0].metrics),
        "tokens/run",
        "cost/run",
        "p50",
        "p95",
        "frontier",
    ]
    body = [
        [
            row.name,
            version_key(row.workflow_hash),
            _rate(row.pass_rate),
            *(_cell(cell) for cell in row.metrics),
            "-"
            if row.tokens_per_run is None
            else f"{row.tokens_per_run:,.0f}" + ("~" if row.tokens_estimated else ""),
            _money(row.cost_per_run_usd, row),
            _seconds(row.latency_p50_s),
            _seconds(row.latency_p95_s),
            "*" if row.frontier else "",
        ]
        for row in rows
    ]
    lines += _table([header, *body], numeric_from=2)
    if any(row.tokens_estimated for row in rows):
        lines.append("~ some tokens are n8n's estimate (the provider reported none)")
    lines += _cases_lines(matrix)
    return "\n".join(lines)


def _cases_lines(matrix: VariantMatrix) -> list[str]:
    """Each case: the base's passing runs, then each variant's with its verdict."""
    variants = [row for row in matrix.rows[1:] if row.cases is not None]
    if not variants:
        return []
    lines = ["", "cases against the base (passing runs; Fisher's exact test, compare's tiers)"]
    for row in variants:
        counts = row.verdict_counts or {}
        said = " · ".join(f"{verdict} {n}" for verdict, n in counts.items() if n)
        lines.append(f"  {row.name}: {said or 'no case'}")
    by_case = {row.name: {case.row_id: case for case in row.cases or []} for row in variants}
    case_ids = sorted({case for cases in by_case.values() for case in cases})
    header = ["case", "base", *(row.name for row in variants)]
    body = []
    for case_id in case_ids:
        first = next(cases[case_id] for cases in by_case.values() if case_id in cases)
        cells = [case_id, f"{first.baseline.passed}/{first.baseline.runs}"]
        for row in variants:
            case = by_case[row.name].get(case_id)
            cells.append(
                "-"
                if case is None
                else f"{case.candidate.passed}/{case.candidate.runs} {case.verdict}"
            )
        body.append(cells)
    return [*lines, "", *_table([header, *body], numeric_from=len(header))]


def variant_matrix_json(matrix: VariantMatrix) -> dict[str, Any]:
    """What `compare --variants --json` prints: every row with its cases and intervals."""
    return {
        "benchmark": matrix.benchmark,
        "base": version_key(matrix.base_hash),
        "frontier": [row.name for row in matrix.rows if row.frontier],
        "versions": [
            {**row.model_dump(mode="json"), "key": version_key(row.workflow_hash)}
            for row in matrix.rows
        ],
    }
