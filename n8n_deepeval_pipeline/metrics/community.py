"""Community metrics: citation faithfulness, loop detection and tool permissions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import MetricConfig, ReasonedMetricConfig


class CitationFaithfulnessConfig(ReasonedMetricConfig):
    """Citation Faithfulness: every [N] citation points at the passage that supports it."""

    metric: Literal["citation_faithfulness"] = "citation_faithfulness"
    threshold: float = Field(default=1.0, ge=0, le=1, description="Pass cutoff.")


class AgentLoopDetectionConfig(MetricConfig):
    """Agent Loop Detection: repeated tool calls, stagnant reasoning, call-graph cycles."""

    metric: Literal["agent_loop_detection"] = "agent_loop_detection"
    include_reason: bool = Field(default=True, description="Say why, in the reason.")
    repetition_threshold: int = Field(
        default=3,
        ge=2,
        description="Identical tool calls (name and arguments) at which the repetition "
        "signal drops to 0.5; at twice as many it is 0.",
    )
    similarity_threshold: float = Field(
        default=0.85,
        gt=0,
        le=1,
        description="How alike two consecutive reasoning steps must be to count as stagnation.",
    )
    check_tool_repetition: bool = Field(default=True, description="Look for repeated calls.")
    check_reasoning_stagnation: bool = Field(
        default=True, description="Look for reasoning that repeats itself."
    )
    check_call_graph_cycles: bool = Field(
        default=True, description="Look for cycles in the trace's call graph."
    )


class ToolPermissionConfig(MetricConfig):
    """Tool Permission: every tool call within the allowlist and outside the denylist."""

    metric: Literal["tool_permission"] = "tool_permission"
    threshold: float = Field(default=1.0, ge=0, le=1, description="Pass cutoff.")
    include_reason: bool = Field(default=True, description="Say why, in the reason.")
    allowed_tools: list[str] | None = Field(
        default=None, description="The only tools the agent may call (or give deniedTools)."
    )
    denied_tools: list[str] | None = Field(
        default=None, description="Tools the agent must never call."
    )

    @model_validator(mode="after")
    def _needs_a_list(self) -> ToolPermissionConfig:
        if not self.allowed_tools and not self.denied_tools:
            raise ValueError("tool_permission needs 'allowedTools' or 'deniedTools' (or both)")
        both = sorted(set(self.allowed_tools or ()) & set(self.denied_tools or ()))
        if both:
            raise ValueError(f"{both} in both 'allowedTools' and 'deniedTools': keep each in one")
        return self


ENTRIES = (
    MetricEntry(
        name="Citation Faithfulness",
        category="community",
        implementation="deepeval.metrics.community.CitationFaithfulnessMetric",
        needs_judge=True,
        required_fields=("input", "actual_output", "retrieval_context"),
        config_model=CitationFaithfulnessConfig,
    ),
    MetricEntry(
        name="Agent Loop Detection",
        category="community",
        implementation="deepeval.metrics.AgentLoopDetectionMetric",
        needs_judge=False,
        needs_trace=True,
        required_fields=("input", "actual_output", "trace"),
        config_model=AgentLoopDetectionConfig,
    ),
    MetricEntry(
        name="Tool Permission",
        category="community",
        implementation="deepeval.metrics.ToolPermissionMetric",
        needs_judge=False,
        required_fields=("tools_called",),
        config_model=ToolPermissionConfig,
    ),
)
