"""A test double of the worker's Evaluator: a task whose metric label starts with
``pollute`` dirties DeepEval's globals before scoring, ``raise`` raises out of the
evaluator, ``hang`` hangs, ``crash`` kills the worker (``crash-later`` after 0.1 s, and
``slow`` answers after 0.3 s: both let others run meanwhile), ``heap`` reports how many objects
are left out of garbage collection and ``inherited`` what the worker was forked with
(certificates loaded, DeepEval templates compiled, answer schemas converted, the
Anthropic SDK imported for an Anthropic judge); every other task reports what it
found of earlier pollution in its reason. The real isolation code (fresh context, trace
manager reset, module snapshot) runs around it unchanged."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import os
import sys
import time

import deepeval
from deepeval.tracing.tracing import trace_manager

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.judging.providers import tls_context
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.judging.wire_format import strict_response_format
from n8n_deepeval_pipeline.worker.evaluate import Evaluator

MARKER = contextvars.ContextVar("pollution_marker", default=None)
ORIGINAL_LOGIN = deepeval.login


class PollutingEvaluator(Evaluator):
    async def _score(self, task: EvaluationTask, judge_spec: JudgeSpec) -> EvaluationResult:
        seen = {
            "trace_spans": len(trace_manager.active_spans),
            "traces": len(trace_manager.traces),
            "context_var": MARKER.get(),
            "module_attribute": deepeval.login is not ORIGINAL_LOGIN,
            "added_attribute": hasattr(deepeval, "polluted_by_test"),
        }
        if task.metric_label.startswith("pollute"):
            MARKER.set("dirty")
            trace_manager.active_spans["leak"] = object()
            trace_manager.traces.append(object())
            deepeval.login = lambda *args, **kwargs: None
            deepeval.polluted_by_test = True
        if task.metric_label == "hang":
            time.sleep(3600)
        if task.metric_label == "crash":
            os._exit(9)
        if task.metric_label in ("crash-later", "slow"):
            await asyncio.sleep(0.1 if task.metric_label == "crash-later" else 0.3)
            if task.metric_label == "crash-later":
                os._exit(9)
        if task.metric_label == "raise":
            raise RuntimeError("an evaluator bug")
        if task.metric_label == "inherited":
            from deepeval.templates.resolver import _registry

            inherited = {
                "certificates": tls_context.cache_info().currsize,
                "templates": sorted({key[1] for key in _registry._compiled}),
                "anthropic_sdk": "anthropic" in sys.modules,
                "answer_schemas": strict_response_format.cache_info().currsize,
            }
            return EvaluationResult(task_id=task.task_id, score=1.0, reason=json.dumps(inherited))
        if task.metric_label == "heap":
            return EvaluationResult(
                task_id=task.task_id, score=1.0, reason=f"{gc.get_freeze_count()}"
            )
        return EvaluationResult(task_id=task.task_id, score=1.0, reason=repr(seen))
