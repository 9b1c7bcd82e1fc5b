"""The verdicts a gate can fail on (``compare.failOn``, the no_regression check).

Apart from the comparison itself, so that the benchmark file's model names them without
loading SciPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

GateVerdict = Literal["regression", "likely_regression"]
"""A verdict a gate (`compare`, the no_regression check) can fail on: compare.failOn."""
# Verdicts that fail a gate, by how sure the drop is.
_GATE_SEVERITY: Mapping[str, int] = MappingProxyType({"likely_regression": 1, "regression": 2})


def fails_gate(verdict: str, fail_on: GateVerdict) -> bool:
    """Whether a case with this verdict fails the gate ``fail_on`` (it or a surer regression)."""
    return _GATE_SEVERITY.get(verdict, 0) >= _GATE_SEVERITY[fail_on]
