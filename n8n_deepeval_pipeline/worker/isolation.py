"""Keep one evaluation from leaking into the next on the same worker.

Each evaluation runs in a fresh ``contextvars.Context`` (tracing context variables
cannot survive it). Afterwards the worker drops every trace and span DeepEval's trace
manager holds, and puts back any attribute of a DeepEval module that the evaluation
rebound, added or deleted, comparing against a snapshot taken once DeepEval and every
catalog metric were imported.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from deepeval.config.settings import get_settings
from deepeval.tracing.tracing import trace_manager

from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.worker.metric_builder import import_implementation

_WATCHED_PREFIX = "deepeval"


def warm_up() -> None:
    """Import every metric implementation and build DeepEval's settings now.

    The first evaluation then pays no import, lazy imports do not look like pollution
    later, and the settings singleton is part of the snapshot (were it restored to
    "unset" after each evaluation, every metric would rebuild it: ~25 ms of CPU).
    """
    for entry in CATALOG.values():
        if entry.implementation is not None:
            import_implementation(entry)
    get_settings()


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
