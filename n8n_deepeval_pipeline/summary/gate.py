"""The gate's word on a version: the cases compare.failOn flags, and what each command exits.

One object for ``compare --json``, ``run --json`` and ``eval-results.json``, so that no
output says "no regression" while a command exits on one, or "regressed" while ``run``
exits 3 on an incomplete run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.statistics.version_comparison import (
    VersionComparison,
    cases_failing_gate,
)
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.workflow.hashing import version_key

# The exit codes the gate and the errors decide (console/exits.py has every code).
EXIT_INCOMPLETE = 3  # run, backfill: too many failed workflow calls or unjudged scores
EXIT_RUN_REGRESSION = 5  # run: a case failed the gate against the previous version
EXIT_REGRESSION = 1  # compare: a case failed the gate
EXIT_COMPARE_FAILED = 2  # compare: no baseline, or a version unknown or not run


class ExitCodes(BaseModel):
    """What ``run`` and ``compare`` exit with for this version (``run --fail-under`` aside)."""

    model_config = ConfigDict(frozen=True)

    run: int
    compare: int


class Gate(BaseModel):
    """The gate (``compare.failOn``) on a version against its baseline, and its exit codes."""

    model_config = ConfigDict(frozen=True)

    fail_on: GateVerdict
    baseline: str | None  # the baseline's version key; None: no earlier version to compare
    flagged_cases: list[str]  # row ids whose verdict is fail_on or a surer regression
    has_regression: bool  # a case is flagged: compare exits 1, run 5 unless incomplete
    incomplete: str | None  # why run counts the version incomplete (exit 3), if it does
    exit_codes: ExitCodes


def version_gate(
    fail_on: GateVerdict, baseline: str | None, flagged: list[str], incomplete: str | None
) -> Gate:
    """The gate of a version: ``flagged`` against ``baseline`` and why it is ``incomplete``.

    ``run`` checks incompleteness first (exit 3), then the gate (5); ``compare`` checks
    only the gate (1), and cannot run without a baseline (2).
    """
    gate_exit = EXIT_RUN_REGRESSION if flagged else 0
    compare_exit = EXIT_REGRESSION if flagged else 0
    return Gate(
        fail_on=fail_on,
        baseline=version_key(baseline) if baseline else None,
        flagged_cases=flagged,
        has_regression=bool(flagged),
        incomplete=incomplete,
        exit_codes=ExitCodes(
            run=EXIT_INCOMPLETE if incomplete else gate_exit,
            compare=EXIT_COMPARE_FAILED if baseline is None else compare_exit,
        ),
    )


def stored_version_gate(
    fail_on: GateVerdict,
    candidate: str,
    baseline: str | None,
    stored: StoredVersions,
    incomplete: str | None,
) -> Gate:
    """The gate of a stored version against ``baseline`` (None: it has none).

    ``stored`` holds both versions' rows; ``incomplete``: why the run is incomplete. What
    ``compare``, ``run`` and the results workspace say of a version.
    """
    comparison = stored.compare(baseline, candidate) if baseline else None
    return comparison_gate(fail_on, baseline, comparison, incomplete)


def comparison_gate(
    fail_on: GateVerdict,
    baseline: str | None,
    comparison: VersionComparison | None,
    incomplete: str | None,
) -> Gate:
    """The gate of a version whose ``comparison`` with ``baseline`` is made (None: none)."""
    flagged = cases_failing_gate(comparison, fail_on) if comparison else []
    return version_gate(fail_on, baseline, flagged, incomplete)
