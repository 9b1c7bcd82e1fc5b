"""Which verdicts a report points out, and in what order."""

from __future__ import annotations

from n8n_deepeval_pipeline.statistics.version_comparison import Verdict

# The verdicts that ask for a look, the most serious first.
FLAGGED: tuple[Verdict, ...] = (
    "regression",
    "likely_regression",
    "unreliable_baseline",
    "improvement",
    "worth_watching",
)


def is_flagged(verdict: Verdict | None) -> bool:
    """Whether a case with this verdict is pointed out (not stable, not missing a side)."""
    return verdict in FLAGGED


def attention_rank(verdict: Verdict | None) -> int:
    """Flagged verdicts by seriousness, then every other verdict (or none) after them."""
    return FLAGGED.index(verdict) if verdict in FLAGGED else len(FLAGGED)
