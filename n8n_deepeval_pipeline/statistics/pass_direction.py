"""Pass direction and strict mode, as the seed's metric nodes apply them."""

from __future__ import annotations

from typing import Literal

Direction = Literal["higher_is_better", "lower_is_better"]


def effective_threshold(threshold: float, strict_mode: bool, direction: Direction) -> float:
    """Strict mode pins the threshold: 1 for higher-is-better metrics, 0 for lower-is-better."""
    if not strict_mode:
        return threshold
    return 1.0 if direction == "higher_is_better" else 0.0


def passes(score: float | None, threshold: float, direction: Direction) -> bool:
    """``score >= threshold``, or ``<=`` for lower-is-better metrics; no score fails."""
    if score is None:
        return False
    return score >= threshold if direction == "higher_is_better" else score <= threshold


def normalised(score: float | None, direction: Direction) -> float | None:
    """The score on a higher-is-better scale: a lower-is-better metric contributes 1 − score."""
    if score is None:
        return None
    return score if direction == "higher_is_better" else 1.0 - score
