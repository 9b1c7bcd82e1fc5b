"""The report's first line against a baseline: what the benchmark's gate (compare.failOn) says.

The banner and the PR comment say it alike, so that neither says "no regression" while
``run`` exits 5 and ``compare`` exits 1 on a gate that fails on likely regressions, nor
"run exits 5" when the run is incomplete and exits 3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from n8n_deepeval_pipeline.report.model import ComparisonReport, Headline
from n8n_deepeval_pipeline.statistics.version_comparison import CaseComparison
from n8n_deepeval_pipeline.summary.gate import Gate


@dataclass(frozen=True)
class GateStatus:
    """How bad the news is and the sentences that say it."""

    level: Literal["bad", "warn", "good"]
    text: str


def _names(cases: Sequence[CaseComparison], name: Callable[[str], str]) -> str:
    return ", ".join(name(case.row_id) for case in cases)


def _verb(cases: Sequence[CaseComparison], singular: str, plural: str) -> str:
    return singular if len(cases) == 1 else plural


def _exits(gate: Gate) -> str:
    """What compare and run exit with, as the gate and the run's errors decide."""
    compare = f"compare exits {gate.exit_codes.compare}"
    if gate.incomplete:
        return f"{compare}; run exits {gate.exit_codes.run}, as the run is incomplete."
    return f"{compare} and run exits {gate.exit_codes.run}."


def _failed(comparison: ComparisonReport, gate: Gate, name: Callable[[str], str]) -> str:
    failing = comparison.gate_failures
    sure = [case for case in failing if case.verdict == "regression"]
    likely = [case for case in failing if case.verdict == "likely_regression"]
    sentences = []
    if sure:
        sentences.append(
            f"Regression: {_names(sure, name)} {_verb(sure, 'passes', 'pass')} "
            "significantly less often than in the baseline."
        )
    if likely:
        sentences.append(
            f"Likely regression: {_names(likely, name)} {_verb(likely, 'passes', 'pass')} "
            "less often than in the baseline, by more than repeated runs usually explain."
        )
    sentences.append(
        f"The gate fails on {len(failing)} {_verb(failing, 'case', 'cases')}: this benchmark "
        f"fails on {comparison.fail_on} (compare.failOn), so {_exits(gate)}"
    )
    return " ".join(sentences)


def gate_status(
    comparison: ComparisonReport, gate: Gate, name: Callable[[str], str] = str
) -> GateStatus:
    """The gate's verdict on the comparison; ``name`` writes a row id for the medium."""
    fail_on = f"{comparison.fail_on} (compare.failOn)"
    if comparison.gate_failures:
        return GateStatus("bad", _failed(comparison, gate, name))
    incomplete = (
        f" Run exits {gate.exit_codes.run}: the run is incomplete." if gate.incomplete else ""
    )
    below = comparison.drops_below_gate
    if below:
        return GateStatus(
            "warn",
            f"The gate passes: no case fails on {fail_on}. "
            f"{len(below)} likely {_verb(below, 'regression', 'regressions')} below it "
            f"to look at: {_names(below, name)}.{incomplete}",
        )
    level: Literal["warn", "good"] = "warn" if gate.incomplete else "good"
    return GateStatus(
        level, f"The gate passes: no case fails on {fail_on} against the baseline.{incomplete}"
    )


def incomplete_run(gate: Gate) -> str:
    """Why the run is incomplete and what ``run`` exits with: the page's and the comment's."""
    return f"Incomplete run: {gate.incomplete}, so run exits {gate.exit_codes.run}."


def unjudged_within_limit(headline: Headline) -> str:
    """Scores without a judgement that leave the run complete (within checks.maxErrorRate)."""
    return (
        f"{headline.unjudged_scores} of {headline.scores} scores have no judgement (timeout or "
        "judge errors), within the error limit: the figures leave them out."
    )
