"""Agentic metrics: how the AI Agent used its tools and followed its plan."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import ReasonedMetricConfig, ToolCallParam


class TaskCompletionConfig(ReasonedMetricConfig):
    """Task Completion: whether the agent accomplished the task (inferred if unset)."""

    metric: Literal["task_completion"] = "task_completion"
    task: str | None = Field(
        default=None, description="The task, when the judge should not infer it from the trace."
    )


class StepEfficiencyConfig(ReasonedMetricConfig):
    """Step Efficiency: unnecessary steps, retries and detours in the trace."""

    metric: Literal["step_efficiency"] = "step_efficiency"


class ArgumentCorrectnessConfig(ReasonedMetricConfig):
    """Argument Correctness: whether each tool call got the right arguments."""

    metric: Literal["argument_correctness"] = "argument_correctness"


class ToolCorrectnessConfig(ReasonedMetricConfig):
    """Tool Correctness: tools called versus expected tools."""

    metric: Literal["tool_correctness"] = "tool_correctness"
    available_tools: list[str] | None = Field(
        default=None,
        description="The tools the agent could choose from: the judge then also grades the "
        "choice, and the score is the lower of the two.",
    )
    evaluation_params: list[ToolCallParam] = Field(
        default_factory=list,
        description="Also compare each call's INPUT_PARAMETERS and OUTPUT with the expected "
        "ones (default: names only).",
    )
    should_exact_match: bool = Field(
        default=False, description="Pass only when the calls are exactly the expected ones."
    )
    should_consider_ordering: bool = Field(
        default=False, description="The calls must come in the expected order."
    )


class PlanAdherenceConfig(ReasonedMetricConfig):
    """Plan Adherence: whether execution followed the plan in the reasoning."""

    metric: Literal["plan_adherence"] = "plan_adherence"


class PlanQualityConfig(ReasonedMetricConfig):
    """Plan Quality: how good the plan itself is for the task."""

    metric: Literal["plan_quality"] = "plan_quality"


_TRACE = ("input", "actual_output", "trace")


def _trace_metric(
    name: str, implementation: str, config: type[ReasonedMetricConfig]
) -> MetricEntry:
    return MetricEntry(
        name=name,
        category="agentic",
        implementation=implementation,
        needs_judge=True,
        needs_trace=True,
        required_fields=_TRACE,
        config_model=config,
    )


ENTRIES = (
    _trace_metric("Task Completion", "deepeval.metrics.TaskCompletionMetric", TaskCompletionConfig),
    _trace_metric("Step Efficiency", "deepeval.metrics.StepEfficiencyMetric", StepEfficiencyConfig),
    MetricEntry(
        name="Argument Correctness",
        category="agentic",
        implementation="deepeval.metrics.ArgumentCorrectnessMetric",
        needs_judge=True,
        required_fields=("input", "tools_called"),
        config_model=ArgumentCorrectnessConfig,
    ),
    MetricEntry(
        name="Tool Correctness",
        category="agentic",
        implementation="deepeval.metrics.ToolCorrectnessMetric",
        needs_judge=False,
        accepts_judge=True,
        required_fields=("input", "tools_called", "expected_tools"),
        config_model=ToolCorrectnessConfig,
    ),
    _trace_metric("Plan Adherence", "deepeval.metrics.PlanAdherenceMetric", PlanAdherenceConfig),
    _trace_metric("Plan Quality", "deepeval.metrics.PlanQualityMetric", PlanQualityConfig),
)
