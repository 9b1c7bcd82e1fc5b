"""The seed's identifiers: ``caseId`` per dataset row and version, ``runId`` per run."""

from __future__ import annotations


def case_id(workflow_hash: str, row_id: str) -> str:
    """``${workflowHash}:${rowId}``, as the seed's Trigger writes it."""
    return f"{workflow_hash}:{row_id}"


def run_id(case: str, run_index: int) -> str:
    """``${caseId}:${runIndex}`` with a 0-based run index."""
    return f"{case}:{run_index}"
