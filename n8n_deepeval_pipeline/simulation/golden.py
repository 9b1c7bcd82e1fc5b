"""The conversational golden of one run: what its simulated user plays.

A dataset row of a simulated benchmark carries DeepEval's golden fields (``scenario``,
``expectedOutcome``, ``userDescription``, ``context``) and, optionally, opening ``turns``
in any form an n8n memory stores (the conversation before the simulated user's first
turn). Each run of the row is one conversation of that golden.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.n8n_data.conversation import (
    ConversationShapeError,
    TurnData,
    parse_conversation,
)
from n8n_deepeval_pipeline.tables.rows import DatasetRow, ExpandedRun


class GoldenError(ValueError):
    """A row cannot be played as a conversation; the message names the row and field."""


class GoldenRun(BaseModel):
    """One conversation to play: the run, its row (the templates read it) and the golden."""

    model_config = ConfigDict(frozen=True)

    run: ExpandedRun
    row: DatasetRow
    opening: list[TurnData]  # the turns before the simulated user's first one

    @property
    def run_id(self) -> str:
        """The run this conversation is the output of."""
        return self.run.run_id

    @property
    def scenario(self) -> str:
        """What the simulated user wants (the dataset guarantees one)."""
        return self.row.scenario or ""


def golden_runs(runs: list[ExpandedRun], rows: list[DatasetRow]) -> list[GoldenRun]:
    """Each run with its row's golden; refuses a row without a scenario or unreadable turns."""
    by_id = {row.row_id: row for row in rows}
    return [_golden_run(run, by_id[run.row_id]) for run in runs]


def _golden_run(run: ExpandedRun, row: DatasetRow) -> GoldenRun:
    where = f"row {row.position} (id {row.row_id!r})"
    if not (row.scenario or "").strip():
        raise GoldenError(f"{where}: a conversational golden needs a scenario")
    try:
        opening = parse_conversation(row.turns) or []
    except ConversationShapeError as error:
        raise GoldenError(f"{where}: the opening turns cannot be read: {error}") from None
    return GoldenRun(run=run, row=row, opening=opening)
