"""Judge panels: one metric scored by several judges, combined into one score and verdict.

Each judge's own verdict is its score against the metric's threshold (in the metric's
direction). Only judges that answered count; a panel needs more than half of its
judges to answer (``quorum``), else it has no verdict.

- ``majority``: the verdict most answering judges reached; the score is the mean of
  their scores (so it lies on the verdict's side of the threshold). A tie (an even
  number answered, split evenly) is broken by the mean of all answering judges' scores.
- ``mean``: the score is the mean of the answering judges' scores, the verdict that
  score against the threshold.

``agreement`` is the share of answering judges whose own verdict is the panel's: 1.0
when they all agree, 2/3 when one of three dissents.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Literal

from pydantic import BaseModel

from n8n_deepeval_pipeline.statistics.pass_direction import Direction, passes

PanelRule = Literal["majority", "mean"]
PANEL_RULES: tuple[PanelRule, ...] = ("majority", "mean")


class PanelVerdict(BaseModel):
    """A panel's combined score and verdict, and how far its judges agreed."""

    score: float
    success: bool
    agreement: float
    answered: int
    judges: int


def quorum(judges: int) -> int:
    """Judges that must answer for a panel verdict: more than half."""
    return judges // 2 + 1


def combine_panel(
    scores: Sequence[float | None], threshold: float, direction: Direction, rule: PanelRule
) -> PanelVerdict | None:
    """The panel's verdict from each judge's score (None: that judge gave none).

    None when fewer than ``quorum`` judges answered.
    """
    answered = [score for score in scores if score is not None]
    if not scores or len(answered) < quorum(len(scores)):
        return None
    verdicts = [passes(score, threshold, direction) for score in answered]
    mean = fmean(answered)
    success = passes(mean, threshold, direction)
    score = mean
    if rule == "majority":
        ayes = sum(verdicts)
        nays = len(verdicts) - ayes
        if ayes != nays:
            success = ayes > nays
            score = fmean(
                s for s, verdict in zip(answered, verdicts, strict=True) if verdict == success
            )
    agreement = sum(verdict == success for verdict in verdicts) / len(verdicts)
    return PanelVerdict(
        score=score,
        success=success,
        agreement=agreement,
        answered=len(answered),
        judges=len(scores),
    )
