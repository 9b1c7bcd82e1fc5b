"""The cost/quality frontier: the versions no other beats on both cost and pass rate.

A version is dominated when another costs no more per run and passes at least as often,
and is strictly better on one of the two. Versions without a cost (a model without a
price) cannot be placed: they are left out, never counted as free.
"""

from __future__ import annotations

from collections.abc import Mapping


def _beats(one: tuple[float, float], other: tuple[float, float]) -> bool:
    (cost, rate), (other_cost, other_rate) = one, other
    return cost <= other_cost and rate >= other_rate and (cost < other_cost or rate > other_rate)


def frontier(points: Mapping[str, tuple[float | None, float | None]]) -> list[str]:
    """The names on the frontier, in the given order; ``points``: name → (cost, pass rate)."""
    placed = {
        name: (cost, rate)
        for name, (cost, rate) in points.items()
        if cost is not None and rate is not None
    }
    return [
        name
        for name, point in placed.items()
        if not any(_beats(other, point) for rival, other in placed.items() if rival != name)
    ]
