"""Figures as the Dagster UI shows them: rounded one way everywhere.

The UI prints a float metadata value as it is, so a pass rate read 0.7195767195767195. A
figure keeps four significant digits (0.7196, a tiny p-value 1.235e-05); a cost in US
dollars keeps its millionths (``cost_usd`` in its name), as the tables do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import dagster as dg

SIGNIFICANT_DIGITS = 4
COST_PLACES = 6


def _rounded(name: str, value: float) -> float:
    if not math.isfinite(value) or value == 0:
        return value
    if "cost_usd" in name:
        return round(value, COST_PLACES) + 0.0  # + 0.0: no "-0.0"
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def shown(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` with every float, plain or a float metadata value, rounded for the UI."""
    rounded: dict[str, Any] = {}
    for name, value in metadata.items():
        if isinstance(value, float):
            value = _rounded(name, value)
        elif isinstance(value, dg.FloatMetadataValue) and value.value is not None:
            value = dg.MetadataValue.float(_rounded(name, value.value))
        rounded[name] = value
    return rounded
