"""Labels beside a judge's verdicts, built by hand for the calibration tests."""

from __future__ import annotations

from n8n_deepeval_pipeline.calibration.judged import JudgedLabel

HASH = "a" * 64


def judged(
    row: str,
    index: int,
    passed: bool | None,
    judge_passed: bool,
    *,
    metric: str = "helpfulness",
    reviewer: str = "ann",
    score: float | None = None,
    rating: int | None = None,
    direction: str = "higher_is_better",
    threshold: float = 0.5,
    **extra,
) -> JudgedLabel:
    """One label of run ``row``:``index`` beside the judge's verdict (and its score)."""
    if score is None:
        score = 0.9 if judge_passed else 0.1
    return JudgedLabel(
        run_id=f"{HASH}:{row}:{index}",
        case_id=f"{HASH}:{row}",
        workflow_hash=HASH,
        metric=metric,
        reviewer=reviewer,
        passed=passed,
        rating=rating,
        score=score,
        threshold=threshold,
        judge_passed=judge_passed,
        direction=direction,
        **extra,
    )
