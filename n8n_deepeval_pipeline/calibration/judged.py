"""A person's label beside the judge's result on the same run and metric.

The results store joins each label with the score the run has now (a re-scored version's
new score), so agreement is always measured against the metric as it is configured.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.tables.ids import row_of_case

RunKind = Literal["benchmark", "online", "red_team"]
# Why a label cannot be set beside a judgement.
LeftOut = Literal["no_verdict", "judge_error", "dry_run"]


class JudgedLabel(BaseModel):
    """One label with the judge's verdict on that run and metric."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    case_id: str
    workflow_hash: str
    metric: str
    reviewer: str
    passed: bool | None  # the person's verdict (None: a rating of 3 gave none)
    rating: int | None
    kind: RunKind = "benchmark"
    score: float | None  # the judge's score (None: it errored)
    threshold: float
    judge_passed: bool
    direction: Direction
    error_kind: str | None = None
    dry_run: bool = False
    judge_agreement: float | None = None  # a panel's agreement with its own verdict

    @property
    def cluster(self) -> str:
        """What repeats of one input share: a dataset row, an online item, an attack.

        A red team's attack is its ``case_id``. Runs of one row (its repeats, and the same
        row in other versions) answer the same input, so they are not independent: the
        bootstrap resamples these clusters.
        """
        return row_of_case(self.case_id) if self.kind == "benchmark" else self.case_id

    @property
    def left_out(self) -> LeftOut | None:
        """Why this label is not compared with a judgement (None: it is)."""
        if self.dry_run:
            return "dry_run"
        if self.error_kind is not None or self.score is None:
            return "judge_error"
        if self.passed is None:
            return "no_verdict"
        return None
