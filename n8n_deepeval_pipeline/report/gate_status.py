"""The report's first line against a baseline: what the benchmark's gate (compare.failOn) says.

The banner and the PR comment say it alike, so that neither says "no regression" while
``run`` exits 5 and ``compare`` exits 1 on a gate that fails on likely regressions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from n8n_deepeval_pipeline.report.model import ComparisonReport
from n8n_deepeval_pipeline.statistics.version_comparison import CaseComparison


@dataclass(frozen=True)
class GateStatus:
    """How bad the news is and the sentences that say it."""

    level: Literal["bad", "warn", "good"]
    text: str


def _names(cases: Sequence[CaseComparison], name: Callable[[str], str]) -> str:
    return ", ".join(name(case.row_id) for case in cases)


def _verb(cases: Sequence[CaseComparison], singular: str, plural: str) -> str:
    return singular if len(cases) == 1 else plural


def _failed(comparison: ComparisonReport, name: Callable[[str], str]) -> str:
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
        f"fails on {comparison.fail_on} (compare.failOn), so compare exits 1 and run exits 5."
    )
    return " ".join(sentences)


def gate_status(comparison: ComparisonReport, name: Callable[[str], str] = str) -> GateStatus:
    """The gate's verdict on the comparison; ``name`` writes a row id for the medium."""
    gate = f"{comparison.fail_on} (compare.failOn)"
    if comparison.gate_failures:
        return GateStatus("bad", _failed(comparison, name))
    below = comparison.drops_below_gate
    if below:
        return GateStatus(
            "warn",
            f"The gate passes: no case fails on {gate}. "
            f"{len(below)} likely {_verb(below, 'regression', 'regressions')} below it "
            f"to look at: {_names(below, name)}.",
        )
    return GateStatus("good", f"The gate passes: no case fails on {gate} against the baseline.")
