"""The comparison of two versions as ``n8n-deepeval compare`` prints it, as text or JSON."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from n8n_deepeval_pipeline.statistics.version_comparison import (
    CaseComparison,
    OverallPassRate,
    VersionComparison,
)
from n8n_deepeval_pipeline.summary.outcome import VersionOutcome
from n8n_deepeval_pipeline.workflow.hashing import version_key


def _rate(side: OverallPassRate) -> str:
    if side.rate is None:
        return "-"
    interval = f" [{side.interval.lower:.1%}, {side.interval.upper:.1%}]" if side.interval else ""
    return f"{side.rate:.1%}{interval} ({side.passed}/{side.runs})"


def _points(delta: float | None) -> str:
    return "-" if delta is None else f"{delta * 100:+.1f}"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _case_line(case: CaseComparison, width: int) -> str:
    baseline = f"{case.baseline.passed}/{case.baseline.runs}"
    candidate = f"{case.candidate.passed}/{case.candidate.runs}"
    return (
        f"{case.row_id:<{width}}  {baseline:>8}  {candidate:>9}  {_points(case.delta):>6}  "
        f"{_p(case.p_value):>5}  {case.verdict}"
    )


# A scenario named under the cases table is cut to one line of this many characters.
SCENARIO_WIDTH = 100


def _one_line(text: str, width: int = SCENARIO_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _scenario_lines(cases: Sequence[CaseComparison], scenarios: Mapping[str, str]) -> list[str]:
    """Each simulated case's scenario: its runs are conversations, not one answer each."""
    named = [case.row_id for case in cases if case.row_id in scenarios]
    if not named:
        return []
    width = max(len(row_id) for row_id in named)
    return [
        "",
        "scenarios (each run of these cases is a simulated conversation):",
        *(f"  {row_id:<{width}}  {_one_line(scenarios[row_id])}" for row_id in named),
    ]


def render_comparison(
    comparison: VersionComparison,
    baseline: str,
    candidate: str,
    scenarios: Mapping[str, str] | None = None,
    placeholders: Collection[str] = (),
) -> str:
    """Headline, the verdict of every case, metric deltas and notable failure drift.

    ``scenarios``: row id → the scenario of a simulated conversation's row, named under
    the cases table; ``placeholders``: the metrics the dry-run judge scored (in either
    version), marked so: their deltas are placeholders', not judgements'.
    """
    width = max([len("case")] + [len(case.row_id) for case in comparison.cases])
    counts = " · ".join(f"{v} {n}" for v, n in comparison.verdict_counts.items() if n)
    lines = [
        f"candidate {version_key(candidate)} against baseline {version_key(baseline)}",
        f"run pass rate {_rate(comparison.baseline_overall)} → "
        f"{_rate(comparison.candidate_overall)}, {_points(comparison.overall_delta)} points",
        f"verdicts: {counts or 'none'}",
        "",
        f"{'case':<{width}}  {'baseline':>8}  {'candidate':>9}  {'delta':>6}  {'p':>5}  verdict",
        *(_case_line(case, width) for case in comparison.cases),
        *_scenario_lines(comparison.cases, scenarios or {}),
    ]
    if comparison.metric_deltas:
        lines += ["", "metric                 mean Δ   pass rate Δ (points)"]
        lines += [
            f"{delta.metric:<21} {_score_delta(delta.mean_score_delta):>7}   "
            f"{_points(delta.pass_rate_delta):>6}"
            + ("   dry-run" if delta.metric in placeholders else "")
            for delta in comparison.metric_deltas
        ]
        if any(delta.metric in placeholders for delta in comparison.metric_deltas):
            lines.append(
                "dry-run: scored by the dry-run judge, placeholders rather than judgements "
                "(set N8N_DEEPEVAL_JUDGE_* to use a real judge)"
            )
    notable = [drift for drift in comparison.failure_drift if drift.notable]
    if notable:
        lines += ["", "failure categories that moved:"]
        lines += [
            f"  {drift.category}: {drift.baseline_count} → {drift.candidate_count} runs "
            f"({_points(drift.rate_delta)} points)"
            for drift in notable
        ]
    return "\n".join(lines)


def _score_delta(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def comparison_json(
    comparison: VersionComparison,
    baseline: str,
    candidate: str,
    outcome: VersionOutcome,
    placeholders: Collection[str] = (),
) -> dict[str, Any]:
    """What `compare --json` prints: the outcome, the verdict table with intervals, deltas.

    ``outcome``: the candidate's against this baseline (its gate, breaches, whether it is
    incomplete, the exit codes), as eval-results.json and ``run --json`` carry it. Each
    case carries ``p_value``, the one-sided p in the direction it moved (the text's and
    the report's), beside both one-sided p-values; ``dry_run_metrics``: the metrics the
    dry-run judge scored.
    """
    return {
        "baseline": version_key(baseline),
        "candidate": version_key(candidate),
        "outcome": outcome.model_dump(mode="json"),
        "dry_run_metrics": sorted(placeholders),
        "result": comparison.model_dump(mode="json"),
    }
