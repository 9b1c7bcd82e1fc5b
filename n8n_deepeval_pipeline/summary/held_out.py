"""The held-out proof: the best candidate against the workflow, on rows the search never saw.

The candidate ran as a variant of the workflow (a version of its own) beside the workflow
itself, on the held-out rows only, ``runsPerRow`` times each, and both were scored by the
benchmark's metrics: their rows of the variant matrix (``summary.variant_matrix``) hold the
run pass rates with Wilson intervals, each case's comparison tier (Fisher's exact test, as
``compare`` uses them) and the workflow's own tokens and cost per run.

The verdict compares the two pass rates over all held-out runs with one-sided Fisher's
exact tests (the test each case's tier uses, on the pooled runs; runs of one row are not
independent samples, so with few rows a significant result says less than its p-value):

- ``significant_improvement``: the candidate passes more often, p < 0.05;
- ``improvement``: more often, but not significantly;
- ``no_change``: as often;
- ``worse``: less often.

The candidate is adopted only when the verdict is one ``adoptWhen`` accepts
(``significant``: a significant improvement; ``better``: any improvement).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.statistics.version_comparison import fisher_p_values
from n8n_deepeval_pipeline.summary.variant_matrix import MatrixRow, VariantMatrix

HeldOutVerdict = Literal["significant_improvement", "improvement", "no_change", "worse"]
SIGNIFICANCE = 0.05
ADOPTED_BY: dict[str, frozenset[str]] = {
    "significant": frozenset({"significant_improvement"}),
    "better": frozenset({"significant_improvement", "improvement"}),
}


class HeldOutProof(BaseModel):
    """The workflow and the candidate on the held-out rows, and what that proves."""

    model_config = ConfigDict(frozen=True)

    rows: list[str]  # the held-out row ids
    runs_per_row: int
    base: MatrixRow
    candidate: MatrixRow
    p_value_rise: float
    p_value_drop: float
    verdict: HeldOutVerdict
    adopted: bool


def held_out_proof(
    matrix: VariantMatrix, candidate: str, rows: list[str], runs_per_row: int, adopt_when: str
) -> HeldOutProof:
    """The verdict on the candidate's row of ``matrix`` against the base's."""
    base, found = matrix.rows[0], matrix.row(candidate)
    p_values = fisher_p_values(base.pass_rate, found.pass_rate)
    if found.pass_rate.passed * base.pass_rate.runs > base.pass_rate.passed * found.pass_rate.runs:
        verdict: HeldOutVerdict = (
            "significant_improvement" if p_values.rise < SIGNIFICANCE else "improvement"
        )
    elif found.pass_rate.rate == base.pass_rate.rate:
        verdict = "no_change"
    else:
        verdict = "worse"
    return HeldOutProof(
        rows=rows,
        runs_per_row=runs_per_row,
        base=base,
        candidate=found,
        p_value_rise=p_values.rise,
        p_value_drop=p_values.drop,
        verdict=verdict,
        adopted=verdict in ADOPTED_BY[adopt_when],
    )


def _rate(row: MatrixRow) -> str:
    rate, interval = row.pass_rate, row.pass_rate.interval
    shown = f"{rate.rate:.1%}" if rate.rate is not None else "-"
    bounds = f" [{interval.lower:.1%}, {interval.upper:.1%}]" if interval is not None else ""
    return f"{shown}{bounds} {rate.passed}/{rate.runs}"


def _per_run(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"${value:.4g}" if unit == "$" else f"{value:.0f}"


def render_held_out(proof: HeldOutProof) -> str:
    """The held-out table: pass rates, metrics, tokens and cost per run, the cases, the verdict."""
    metrics = [cell.metric for cell in proof.base.metrics]
    header = ["version", "pass rate [95% CI]", *metrics, "tokens/run", "cost/run"]
    lines = []
    for name, row in (("workflow", proof.base), ("candidate", proof.candidate)):
        cells = [
            f"{cell.mean_score:.3f}" if cell.mean_score is not None else "-" for cell in row.metrics
        ]
        lines.append(
            [
                name,
                _rate(row),
                *cells,
                _per_run(row.tokens_per_run),
                _per_run(row.cost_per_run_usd, "$"),
            ]
        )
    widths = [max(len(str(line[i])) for line in [header, *lines]) for i in range(len(header))]
    table = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True))
        for line in [header, *lines]
    ]
    cases = proof.candidate.cases or []
    tiers = ", ".join(
        f"{case.row_id} {case.baseline.passed}/{case.baseline.runs} → "
        f"{case.candidate.passed}/{case.candidate.runs} {case.verdict}"
        for case in cases
    )
    words = {
        "significant_improvement": "a significant improvement",
        "improvement": "better, but not significantly",
        "no_change": "no change",
        "worse": "worse",
    }[proof.verdict]
    adopted = "adopted" if proof.adopted else "not adopted"
    return "\n".join(
        [
            f"held-out proof: {len(proof.rows)} rows × {proof.runs_per_row} runs, never seen by "
            "the search",
            *table,
            f"cases: {tiers}",
            f"verdict: {words} (one-sided Fisher's exact test on the pooled runs: "
            f"p = {proof.p_value_rise:.4f} for a rise) · {adopted}",
        ]
    )
