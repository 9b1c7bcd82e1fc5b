"""Which verdicts a report points out, in what order, and what a reader should do about each."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from n8n_deepeval_pipeline.statistics.version_comparison import PassCount, Verdict

# The verdicts that ask for a look, the most serious first.
FLAGGED: tuple[Verdict, ...] = (
    "regression",
    "likely_regression",
    "unreliable_baseline",
    "improvement",
    "worth_watching",
)

# The flagged verdicts that say a case passes less often: its details open in the page.
DROPS: tuple[Verdict, ...] = ("regression", "likely_regression", "unreliable_baseline")

# One sentence per tier: how much a case with this verdict deserves a reader's time.
GUIDANCE: Mapping[Verdict, str] = MappingProxyType(
    {
        "regression": "A large drop from a baseline that passed reliably, too clear to be "
        "chance: read the candidate's failing runs before merging.",
        "likely_regression": "A drop that repeated runs could still explain: look at it if "
        "your change touches what this case exercises, otherwise more runs settle it.",
        "unreliable_baseline": "A clear drop, but the baseline already failed this case often: "
        "make the baseline pass reliably before trusting either version here.",
        "improvement": "Passes clearly more often: check the gain is the one you meant, not "
        "a looser answer.",
        "worth_watching": "Moved a lot without enough runs for a verdict: note it, and add "
        "runs per case if it keeps moving.",
        "stable": "No change beyond what repeated runs vary by: nothing to do.",
        "insufficient_data": "Only one version has runs of this case: nothing to compare.",
    }
)


def is_flagged(verdict: Verdict | None) -> bool:
    """Whether a case with this verdict is pointed out (not stable, not missing a side)."""
    return verdict in FLAGGED


def is_drop(verdict: Verdict | None) -> bool:
    """Whether a case with this verdict passes less often, surely enough to be flagged."""
    return verdict in DROPS


def attention_rank(verdict: Verdict | None) -> int:
    """Flagged verdicts by seriousness, then every other verdict (or none) after them."""
    return FLAGGED.index(verdict) if verdict in FLAGGED else len(FLAGGED)


def attention_order(
    verdict: Verdict | None, candidate: PassCount, row_id: str
) -> tuple[int, float, str]:
    """Flagged verdicts first, the most serious first, then the least passing candidates.

    The cases table and the case details both sort by it, so that they read alike.
    """
    rate = candidate.rate if candidate.rate is not None else 2.0  # no runs: last of its tier
    return attention_rank(verdict), rate, row_id
