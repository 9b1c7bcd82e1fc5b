"""Construct a DeepEval metric from a catalog entry and its config (worker side only).

The config's field names are DeepEval's constructor names in snake_case; only a few
values need a DeepEval type, converted here by keyword, not per metric.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from deepeval.metrics import BaseMetric
from deepeval.metrics.g_eval.utils import Rubric
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import SingleTurnParams, ToolCall, ToolCallParams

from n8n_deepeval_pipeline.metrics.catalog import MetricEntry
from n8n_deepeval_pipeline.metrics.configs import RUNTIME_OPTIONS, MetricConfig


def _evaluation_params(entry: MetricEntry, names: list[str]) -> list[Any]:
    enum = ToolCallParams if entry.slug == "tool_correctness" else SingleTurnParams
    return [enum[name] for name in names]


_CONVERTERS: dict[str, Callable[[MetricEntry, Any], Any]] = {
    "evaluation_params": _evaluation_params,
    "rubric": lambda _entry, bands: [
        Rubric(score_range=tuple(band["score_range"]), expected_outcome=band["expected_outcome"])
        for band in bands
    ],
    "available_tools": lambda _entry, names: [ToolCall(name=name) for name in names],
}


def _deepeval_class(entry: MetricEntry) -> type[BaseMetric]:
    module, _, name = entry.deepeval_class.rpartition(".")
    cls: type[BaseMetric] = getattr(importlib.import_module(module), name)
    return cls


def construct_metric(
    entry: MetricEntry, config: MetricConfig, judge: DeepEvalBaseLLM | None
) -> BaseMetric:
    """A fresh metric instance (G-Eval caches its steps on the instance: never reuse one)."""
    kwargs: dict[str, Any] = {}
    for key, value in config.model_dump(exclude=set(RUNTIME_OPTIONS)).items():
        if value is None:
            continue
        kwargs[key] = _CONVERTERS[key](entry, value) if key in _CONVERTERS else value
    if entry.needs_judge or entry.accepts_judge:
        kwargs["model"] = judge
    cls = _deepeval_class(entry)
    accepted = inspect.signature(cls.__init__).parameters
    # Common options some deterministic metrics lack (Exact Match has no strict_mode);
    # the pipeline still applies strictness through the pinned threshold.
    for option in _COMMON_OPTIONS - accepted.keys():
        kwargs.pop(option, None)
    return cls(**kwargs)


_COMMON_OPTIONS = frozenset({"strict_mode", "include_reason", "async_mode", "verbose_mode"})
