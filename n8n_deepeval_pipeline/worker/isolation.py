"""Keep one evaluation from leaking into the next on the same worker.

Each evaluation runs in a fresh ``contextvars.Context`` (tracing context variables
cannot survive it). Afterwards the worker drops every trace and span DeepEval's trace
manager holds, and puts back any attribute of a DeepEval module that the evaluation
rebound, added or deleted, comparing against a snapshot taken once DeepEval and every
catalog metric were imported (``worker.warming``).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from deepeval.tracing.tracing import trace_manager

_WATCHED_PREFIX = "deepeval"


def _watched_modules() -> dict[str, ModuleType]:
    return {
        name: module
        for name, module in list(sys.modules.items())
        if name.startswith(_WATCHED_PREFIX) and isinstance(module, ModuleType)
    }


class ModuleSnapshot:
    """The attributes of every loaded DeepEval module, to restore after each evaluation."""

    def __init__(self) -> None:
        self._saved = {name: dict(vars(module)) for name, module in _watched_modules().items()}

    def restore(self) -> int:
        """Undo attribute changes since the snapshot; return how many were undone."""
        repairs = 0
        for name, module in _watched_modules().items():
            saved = self._saved.get(name)
            if saved is None:
                continue  # imported during an evaluation: nothing to compare with
            current = vars(module)
            if len(current) == len(saved) and all(
                current.get(key, _MISSING) is value for key, value in saved.items()
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
