"""Construct a DeepEval metric from a catalog entry and its config (worker side only).

The config's field names are DeepEval's constructor names in snake_case; only a few
values need a DeepEval type, converted here by keyword, not per metric.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from deepeval.config.eval_mode import EvalMode
from deepeval.metrics import BaseMetric
from deepeval.metrics.dag.graph import DeepAcyclicGraph
from deepeval.metrics.g_eval.utils import Rubric
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import MultiTurnParams, SingleTurnParams, ToolCall, ToolCallParams

from n8n_deepeval_pipeline.metrics.dag import DagGraph
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.json_schema_model import model_from_json_schema
from n8n_deepeval_pipeline.metrics.options import RUNTIME_OPTIONS, TEST_CASE_OPTIONS, MetricConfig
from n8n_deepeval_pipeline.worker.pattern_engine import compile_pattern

# Common options some metrics lack (Exact Match has no strict_mode, Arena G-Eval no
# threshold); the pipeline still applies them through the pinned threshold.
_COMMON_OPTIONS = frozenset(
    {"threshold", "strict_mode", "include_reason", "async_mode", "verbose_mode"}
)


def _evaluation_params(entry: MetricEntry, names: list[str]) -> list[Any]:
    enum: Any = {
        "tool_correctness": ToolCallParams,
        "conversational_g_eval": MultiTurnParams,
    }.get(entry.slug, SingleTurnParams)
    return [enum[name] for name in names]


def _dag(entry: MetricEntry, graph: DagGraph) -> DeepAcyclicGraph:
    return DeepAcyclicGraph.from_dict(graph.to_deepeval_dict(), multiturn=entry.needs_turns)


# Keyed by option; each takes the option's validated value (not its dumped form).
_CONVERTERS: dict[str, Callable[[MetricEntry, Any], Any]] = {
    "evaluation_params": _evaluation_params,
    "rubric": lambda _entry, bands: [
        Rubric(score_range=band.score_range, expected_outcome=band.expected_outcome)
        for band in bands
    ],
    "available_tools": lambda _entry, names: [ToolCall(name=name) for name in names],
    "dag": _dag,
    "expected_schema": lambda _entry, schema: model_from_json_schema(schema),
}


def _pattern_in_bounded_time(metric: Any) -> None:
    """Pattern Match's pattern on RE2 where it answers as re does, else on re time-limited."""
    metric._compiled_pattern = compile_pattern(metric.pattern, metric.ignore_case)


# What a metric of a slug gets after DeepEval has built it.
_AFTER_CONSTRUCTION: dict[str, Callable[[Any], None]] = {
    "pattern_match": _pattern_in_bounded_time,
}


def import_implementation(entry: MetricEntry) -> Any:
    """The DeepEval class the entry names."""
    if entry.implementation is None:
        raise ValueError(f"{entry.name} is run by this project's runner, not by DeepEval")
    module, _, name = entry.implementation.rpartition(".")
    return getattr(importlib.import_module(module), name)


@functools.cache
def _constructor_options(cls: type[Any]) -> frozenset[str]:
    """The keywords a DeepEval class's constructor takes (read once per class)."""
    return frozenset(inspect.signature(cls.__init__).parameters)


def construct_metric(
    entry: MetricEntry,
    config: MetricConfig,
    judge: DeepEvalBaseLLM | None,
    eval_mode: EvalMode | None = None,
) -> BaseMetric:
    """A fresh metric instance (G-Eval caches its steps on the instance: never reuse one).

    ``eval_mode``: DeepEval's eval mode as the worker resolved it once; given, a metric
    that takes one does not resolve it again from DeepEval's settings, which rehashes
    the environment each time (about a millisecond of CPU per evaluation).
    """
    kwargs: dict[str, Any] = {}
    excluded = set(RUNTIME_OPTIONS | TEST_CASE_OPTIONS)
    for key in type(config).model_fields.keys() - excluded:
        value = getattr(config, key)
        if value is None:
            continue
        kwargs[key] = _CONVERTERS[key](entry, value) if key in _CONVERTERS else value
    if entry.complement_score:
        # DeepEval scores the complement here: its threshold is the complement too.
        kwargs["threshold"] = 1.0 - config.threshold
    if entry.needs_judge or entry.accepts_judge:
        kwargs["model"] = judge
    cls = import_implementation(entry)
    accepted = _constructor_options(cls)
    for option in _COMMON_OPTIONS - accepted:
        kwargs.pop(option, None)
    if eval_mode is not None and "eval_mode" in accepted:
        kwargs["eval_mode"] = eval_mode
    metric: BaseMetric = cls(**kwargs)
    if entry.slug in _AFTER_CONSTRUCTION:
        _AFTER_CONSTRUCTION[entry.slug](metric)
    return metric
