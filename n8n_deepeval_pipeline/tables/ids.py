"""The seed's identifiers: ``caseId`` per dataset row and version, ``runId`` per run."""

from __future__ import annotations


def case_id(workflow_hash: str, row_id: str) -> str:
    """``${workflowHash}:${rowId}``, as the seed's Trigger writes it."""
    return f"{workflow_hash}:{row_id}"


def run_id(case: str, run_index: int) -> str:
    """``${caseId}:${runIndex}`` with a 0-based run index."""
    return f"{case}:{run_index}"


def row_of_case(case: str) -> str:
    """The row id of a ``caseId`` (the hash is hexadecimal, so the first colon ends it)."""
    return case.split(":", 1)[1]


def run_index_of(run: str) -> int:
    """The run index of a ``runId`` (after its last colon)."""
    return int(run.rsplit(":", 1)[1])


def row_of_run(run: str) -> str:
    """The row id of a ``runId``: between the hash and the run index."""
    return row_of_case(run.rsplit(":", 1)[0])
