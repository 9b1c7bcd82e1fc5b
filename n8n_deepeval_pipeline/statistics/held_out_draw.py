"""Which rows are held out: a seeded draw of their ids, at least one held out, two kept.

Both searches that rewrite a text (a workflow's prompt, a judge metric's criteria) hold
rows out of the search to judge its result on: the draw depends on the ids alone (sorted),
not on their order, so the same rows and the same seed hold out the same rows.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

MIN_TRAINING_ROWS = 2  # DeepEval's optimisers need two goldens at least


class SplitError(ValueError):
    """Too few rows to hold some out and still search (the message says how many)."""


def held_out_ids(ids: Iterable[str], share: float, seed: int) -> set[str]:
    """About ``share`` of the distinct ``ids``, drawn by ``seed``: one at least, two left."""
    distinct = sorted(set(ids))
    if len(distinct) < MIN_TRAINING_ROWS + 1:
        raise SplitError(
            f"{len(distinct)} rows: at least {MIN_TRAINING_ROWS + 1} are needed (two to "
            "search on, one held out to prove the gain)"
        )
    count = min(max(1, round(len(distinct) * share)), len(distinct) - MIN_TRAINING_ROWS)
    return set(random.Random(f"held-out:{seed}").sample(distinct, count))
