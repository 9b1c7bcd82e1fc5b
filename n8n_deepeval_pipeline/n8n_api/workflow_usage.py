"""The workflow's own language-model usage in each run: tokens per model node, priced.

Read from the run's executions (``executions.model_calls_by_session``), each model node's
calls summed, priced by the model the node names (``workflow.model_nodes``) with the price
table (the built-in one, ``N8N_DEEPEVAL_PRICES``, then the target's ``prices``). A node
whose model has no price makes the run's cost unknown rather than lower: the run is
"unpriced". A run whose executions were not found is not measured (its columns stay None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.n8n_api.executions import ModelCall
from n8n_deepeval_pipeline.tables.rows import AgentOutput


class NodeUsage(BaseModel):
    """One model node's calls in one run."""

    node: str
    model: str | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool  # some of its calls' tokens are n8n's estimate
    cost_usd: float | None  # None: the model has no price (or the node names none)


def node_usage(
    calls: list[ModelCall], models: Mapping[str, str | None], prices: PriceTable
) -> list[NodeUsage]:
    """Each model node's calls summed, in the order the nodes first ran."""
    by_node: dict[str, list[ModelCall]] = {}
    for call in calls:
        by_node.setdefault(call.node, []).append(call)
    usage = []
    for node, own in by_node.items():
        prompt = sum(call.prompt_tokens for call in own)
        completion = sum(call.completion_tokens for call in own)
        model = models.get(node)
        usage.append(
            NodeUsage(
                node=node,
                model=model,
                calls=len(own),
                prompt_tokens=prompt,
                completion_tokens=completion,
                estimated=any(call.estimated for call in own),
                cost_usd=None if model is None else prices.cost(model, prompt, completion),
            )
        )
    return usage


def usage_fields(nodes: list[NodeUsage]) -> dict[str, Any]:
    """The ``llm_*`` columns of a run's AgentOutput from its nodes' usage."""
    costs = [node.cost_usd for node in nodes]
    return {
        "llm_prompt_tokens": sum(node.prompt_tokens for node in nodes),
        "llm_completion_tokens": sum(node.completion_tokens for node in nodes),
        "llm_tokens_estimated": any(node.estimated for node in nodes),
        "llm_cost_usd": None if None in costs else sum(c for c in costs if c is not None),
        "llm_usage": [node.model_dump() for node in nodes],
    }


def with_usage(
    outputs: list[AgentOutput],
    calls_by_session: Mapping[str, list[ModelCall]],
    models: Mapping[str, str | None],
    prices: PriceTable,
) -> list[AgentOutput]:
    """The outputs with their runs' usage, each found by its session (else left unmeasured).

    A run whose executions hold no model call used no model: zero tokens, cost 0.
    """
    return [
        output.model_copy(
            update=usage_fields(node_usage(calls_by_session[output.session_id], models, prices))
        )
        if output.session_id is not None and output.session_id in calls_by_session
        else output
        for output in outputs
    ]
