"""Expanded runs: every dataset row repeated ``runsPerRow`` times, with the seed's ids."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.dataset import DatasetRow


class ExpandedRun(BaseModel):
    """One run of the workflow on one dataset row."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    case_id: str
    run_index: int
    row_id: str


def case_id(workflow_hash: str, row_id: str) -> str:
    """``${workflowHash}:${rowId}``, as the seed's Trigger writes it."""
    return f"{workflow_hash}:{row_id}"


def run_id(case: str, run_index: int) -> str:
    """``${caseId}:${runIndex}`` with a 0-based run index."""
    return f"{case}:{run_index}"


def expand_runs(workflow_hash: str, rows: list[DatasetRow], runs_per_row: int) -> list[ExpandedRun]:
    """Rows × runsPerRow, row-major: all runs of the first row, then the next row."""
    runs: list[ExpandedRun] = []
    for row in rows:
        case = case_id(workflow_hash, row.row_id)
        runs.extend(
            ExpandedRun(
                run_id=run_id(case, index), case_id=case, run_index=index, row_id=row.row_id
            )
            for index in range(runs_per_row)
        )
    return runs
