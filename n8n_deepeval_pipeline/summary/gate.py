"""The gate's word on a version: the cases compare.failOn flags against its baseline.

Part of a version's outcome (``summary.outcome``), which decides the exit codes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.statistics.version_comparison import (
    VersionComparison,
    cases_failing_gate,
)
from n8n_deepeval_pipeline.workflow.hashing import version_key


class Gate(BaseModel):
    """The gate (``compare.failOn``) on a version against its baseline."""

    model_config = ConfigDict(frozen=True)

    fail_on: GateVerdict
    baseline: str | None  # the baseline's version key; None: no earlier version to compare
    flagged_cases: list[str]  # row ids whose verdict is fail_on or a surer regression

    @computed_field  # type: ignore[prop-decorator]
    @property
    def has_regression(self) -> bool:
        """A case is flagged: compare exits 1 (derived, so it cannot disagree with them)."""
        return bool(self.flagged_cases)


def version_gate(fail_on: GateVerdict, baseline: str | None, flagged: list[str]) -> Gate:
    """The gate of a version: the cases ``flagged`` against ``baseline`` (None: it has none)."""
    return Gate(
        fail_on=fail_on,
        baseline=version_key(baseline) if baseline else None,
        flagged_cases=flagged,
    )


def comparison_gate(
    fail_on: GateVerdict, baseline: str | None, comparison: VersionComparison | None
) -> Gate:
    """The gate of a version whose ``comparison`` with ``baseline`` is made (None: none)."""
    flagged = cases_failing_gate(comparison, fail_on) if comparison else []
    return version_gate(fail_on, baseline if comparison else None, flagged)
