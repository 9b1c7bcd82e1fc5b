"""MCP metrics: how an agent used the MCP servers its MCP Client Tool nodes reach."""

from __future__ import annotations

from typing import Literal

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import ReasonedMetricConfig


class McpUseConfig(ReasonedMetricConfig):
    """MCP Use: the MCP tools, resources and prompts chosen, and the arguments given them.

    The lower of the two judgements, on one run.
    """

    metric: Literal["mcp_use"] = "mcp_use"


class McpTaskCompletionConfig(ReasonedMetricConfig):
    """MCP Task Completion: each task of the conversation done with the MCP calls made."""

    metric: Literal["mcp_task_completion"] = "mcp_task_completion"


class MultiTurnMcpUseConfig(ReasonedMetricConfig):
    """Multi-Turn MCP Use: MCP tool choice and arguments, task by task, over a conversation."""

    metric: Literal["multi_turn_mcp_use"] = "multi_turn_mcp_use"


def _conversation_metric(
    name: str, implementation: str, config: type[ReasonedMetricConfig]
) -> MetricEntry:
    return MetricEntry(
        name=name,
        category="mcp",
        implementation=f"deepeval.metrics.{implementation}",
        needs_judge=True,
        needs_turns=True,
        required_fields=("turns", "mcp_servers"),
        config_model=config,
    )


ENTRIES = (
    MetricEntry(
        name="MCP Use",
        category="mcp",
        implementation="deepeval.metrics.MCPUseMetric",
        needs_judge=True,
        required_fields=("input", "actual_output", "mcp_servers"),
        config_model=McpUseConfig,
    ),
    _conversation_metric("MCP Task Completion", "MCPTaskCompletionMetric", McpTaskCompletionConfig),
    _conversation_metric("Multi-Turn MCP Use", "MultiTurnMCPUseMetric", MultiTurnMcpUseConfig),
)
