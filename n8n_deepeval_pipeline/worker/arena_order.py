"""DeepEval's arena shuffles, kept in the order the pipeline chose (worker side only).

``ArenaGEval`` masks the contestants' names with fake ones and lists them to the judge in
a random order, both drawn from the process-wide ``random`` module. The pipeline chooses
the order itself (the opponent first on odd run indexes, so that position bias cancels
over a case's runs), and a re-run must send the same prompts for the judge's cache to
answer it: the arena's ``random`` is given a ``shuffle`` that keeps the order, so the
first contestant is always masked as Alice and shown first, the second as Bob.
"""

from __future__ import annotations

import random
from typing import Any


class _KeptOrder:
    """The ``random`` module with a ``shuffle`` that leaves the list as it is."""

    def shuffle(self, items: list[Any]) -> None:
        """Keep ``items`` in their order."""

    def __getattr__(self, name: str) -> Any:
        return getattr(random, name)


def keep_arena_order() -> None:
    """Make DeepEval's arena keep its contestants in the order given (idempotent)."""
    from deepeval.metrics.arena_g_eval import utils

    namespace = vars(utils)  # the module's own ``random``, which its shuffles use
    if not isinstance(namespace["random"], _KeptOrder):
        namespace["random"] = _KeptOrder()
