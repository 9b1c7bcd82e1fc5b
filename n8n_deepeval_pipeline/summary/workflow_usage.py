"""What the workflow itself spent over a version's runs: its models' tokens, cost, latency.

Summed from ``agent_outputs`` (its ``llm_*`` columns, read from the runs' executions): the
runs measured, tokens in and out, the cost where every model has a price, per run as well,
and the latency's median and 95th percentile (linear interpolation between runs, as
``numpy.percentile``). A model without a price leaves the cost unknown ("unpriced"):
it is named, and never counted as free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from n8n_deepeval_pipeline.tables.rows import AgentOutput

UNNAMED_MODEL = "(model not named in the workflow)"


class ModelNodeUsage(BaseModel):
    """One model node over the measured runs."""

    node: str
    model: str | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    cost_usd: float | None  # None: the model has no price


class WorkflowUsage(BaseModel):
    """The workflow's own spend over a version's runs."""

    runs: int  # runs with a latency (every run that called the workflow)
    measured_runs: int  # runs whose model usage was read from their executions
    prompt_tokens: int
    completion_tokens: int
    estimated: bool  # some tokens are n8n's estimate (the provider reported none)
    tokens_per_run: float | None
    cost_usd: float | None  # every measured run priced; None otherwise
    cost_per_run_usd: float | None
    unpriced_models: list[str]
    latency_p50_s: float | None
    latency_p95_s: float | None
    nodes: list[ModelNodeUsage]


def per_run_money(value: float | None) -> str:
    """A cost per run in US dollars, to three significant digits: ``$0.000412``, ``$1.24``."""
    if value is None:
        return "-"
    if value == 0:
        return "$0"
    decimals = max(2, 2 - math.floor(math.log10(abs(value))))
    return f"${value:.{decimals}f}"


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100) by linear interpolation; None without values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def _nodes(outputs: Sequence[AgentOutput]) -> list[ModelNodeUsage]:
    found: dict[tuple[str, str | None], ModelNodeUsage] = {}
    for output in outputs:
        for entry in output.llm_usage or []:
            key = (str(entry["node"]), entry.get("model"))
            seen = found.get(key) or ModelNodeUsage(
                node=key[0],
                model=key[1],
                calls=0,
                prompt_tokens=0,
                completion_tokens=0,
                estimated=False,
                cost_usd=0.0,
            )
            cost = entry.get("cost_usd")
            found[key] = seen.model_copy(
                update={
                    "calls": seen.calls + int(entry["calls"]),
                    "prompt_tokens": seen.prompt_tokens + int(entry["prompt_tokens"]),
                    "completion_tokens": seen.completion_tokens + int(entry["completion_tokens"]),
                    "estimated": seen.estimated or bool(entry.get("estimated")),
                    "cost_usd": None if cost is None or seen.cost_usd is None
                    else seen.cost_usd + float(cost),
                }
            )  # fmt: skip
    return list(found.values())


def workflow_usage(outputs: Sequence[AgentOutput]) -> WorkflowUsage:
    """The workflow's tokens, cost and latency over these runs."""
    measured = [output for output in outputs if output.llm_prompt_tokens is not None]
    nodes = _nodes(measured)
    prompt = sum(output.llm_prompt_tokens or 0 for output in measured)
    completion = sum(output.llm_completion_tokens or 0 for output in measured)
    costs = [output.llm_cost_usd for output in measured]
    cost = sum(c for c in costs if c is not None) if measured and None not in costs else None
    latencies = [output.latency_s for output in outputs if output.latency_s is not None]
    unpriced = sorted({node.model or UNNAMED_MODEL for node in nodes if node.cost_usd is None})
    return WorkflowUsage(
        runs=len(latencies),
        measured_runs=len(measured),
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated=any(output.llm_tokens_estimated for output in measured),
        tokens_per_run=(prompt + completion) / len(measured) if measured else None,
        cost_usd=cost,
        cost_per_run_usd=None if cost is None else cost / len(measured),
        unpriced_models=unpriced,
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        nodes=nodes,
    )
