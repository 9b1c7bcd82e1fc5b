"""Keep one evaluation from leaking into the next on the same worker.

Each evaluation runs in a fresh ``contextvars.Context`` (tracing context variables
cannot survive it). Afterwards the worker drops every trace and span DeepEval's trace
manager holds, and puts back any attribute of a DeepEval module that the evaluation
rebound, added or deleted, comparing against a snapshot taken once DeepEval and every
catalog metric were imported (``worker.warming``).
"""

from __future__ import annotations

import operator
import sys
from types import ModuleType
from typing import Any

from deepeval.tracing.tracing import trace_manager

_WATCHED_PREFIX = "deepeval"


class ModuleSnapshot:
    """The attributes of every loaded DeepEval module, to restore after each evaluation."""

    def __init__(self) -> None:
        self._saved = [
            (name, dict(vars(module)), tuple(vars(module)), tuple(vars(module).values()))
            for name, module in list(sys.modules.items())
            if name.startswith(_WATCHED_PREFIX) and isinstance(module, ModuleType)
        ]

    def restore(self) -> int:
        """Undo attribute changes since the snapshot; return how many were undone.

        A module imported since has nothing to compare with and is left alone.
        """
        repairs = 0
        for name, saved, keys, values in self._saved:
            module = sys.modules.get(name)
            if not isinstance(module, ModuleType):
                continue
            current = vars(module)
            # The same names bound to the same objects in the same order: untouched. Compared
            # in C: the walk in Python took ~20 ms of CPU each time a worker went idle, now ~1 ms.
            if (
                len(current) == len(keys)
                and all(map(operator.is_, current, keys))
                and all(map(operator.is_, current.values(), values))
            ):
                continue
            repairs += _restore_module(module, saved)
        return repairs


_MISSING = object()


def _restore_module(module: ModuleType, saved: dict[str, Any]) -> int:
    current = vars(module)
    repairs = 0
    for key, value in saved.items():
        if current.get(key, _MISSING) is not value:
            setattr(module, key, value)
            repairs += 1
    for key in [key for key in current if key not in saved]:
        if not isinstance(current[key], ModuleType):  # a submodule import is not pollution
            delattr(module, key)
            repairs += 1
    return repairs


def reset_trace_manager() -> None:
    """Drop every trace and span DeepEval's trace manager holds."""
    trace_manager.clear_traces()
    trace_manager.active_traces.clear()
    trace_manager.active_spans.clear()


def trace_manager_is_clean() -> bool:
    """True when no trace or span is left behind."""
    return not (trace_manager.traces or trace_manager.active_traces or trace_manager.active_spans)
