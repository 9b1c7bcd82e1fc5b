"""Config models of the metrics, with the seed's option names (camelCase in YAML).

Each model carries its slug as the literal ``metric`` field, so a benchmark's metric
list is one tagged union and an unknown slug is answered with the list of valid ones.
Fields that are runtime options of this project (``cleanSession``, ``label``,
``timeoutS``) are not passed to DeepEval.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

# Options that belong to the runner, never to the DeepEval constructor.
RUNTIME_OPTIONS = frozenset({"metric", "label", "clean_session", "timeout_s"})

SingleTurnParam = Literal[
    "INPUT",
    "ACTUAL_OUTPUT",
    "EXPECTED_OUTPUT",
    "CONTEXT",
    "RETRIEVAL_CONTEXT",
    "TOOLS_CALLED",
    "EXPECTED_TOOLS",
]
ToolCallParam = Literal["INPUT_PARAMETERS", "OUTPUT"]


class MetricConfig(BaseModel):
    """Options every metric has."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    metric: str
    label: str | None = Field(
        default=None, description="Name of this metric's column in results (default: the slug)."
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="Pass cutoff.")
    strict_mode: bool = Field(
        default=False,
        description="Binary 1/0 scoring; pins the threshold (1, or 0 if lower is better).",
    )
    verbose_mode: bool = False
    clean_session: bool = Field(
        default=False, description="Replace the worker process after this metric's evaluation."
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="Per-evaluation timeout; default is the worker pool's."
    )

    def result_label(self) -> str:
        """The name of this metric's rows in metric_scores."""
        return self.label or self.metric


class ReasonedMetricConfig(MetricConfig):
    """Options of metrics that can explain their score and run judge calls concurrently."""

    include_reason: bool = True
    async_mode: bool = True


class RubricBand(BaseModel):
    """A G-Eval score band: scores in ``scoreRange`` mean ``expectedOutcome``."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    score_range: tuple[int, int]
    expected_outcome: str = Field(min_length=1)

    @model_validator(mode="after")
    def _range_within_0_10(self) -> RubricBand:
        low, high = self.score_range
        if not 0 <= low <= high <= 10:
            raise ValueError("scoreRange must be [low, high] with 0 <= low <= high <= 10")
        return self


class GEvalConfig(MetricConfig):
    """G-Eval: LLM-as-a-judge against your criteria or fixed evaluation steps."""

    metric: Literal["g_eval"] = "g_eval"
    name: str = Field(min_length=1, description="Metric display name.")
    criteria: str | None = None
    evaluation_steps: list[str] | None = Field(default=None, min_length=1)
    evaluation_params: list[SingleTurnParam] = Field(min_length=1)
    rubric: list[RubricBand] | None = None
    async_mode: bool = True

    @model_validator(mode="after")
    def _criteria_xor_steps(self) -> GEvalConfig:
        if (self.criteria is None) == (self.evaluation_steps is None):
            raise ValueError(
                "G-Eval needs exactly one of 'criteria' or 'evaluationSteps' "
                "(not both, not neither)"
            )
        return self

    def result_label(self) -> str:
        """G-Eval rows are named after the metric's own name unless a label is set."""
        return self.label or self.name


class BiasConfig(ReasonedMetricConfig):
    """Bias: share of biased opinions in the output (lower is better)."""

    metric: Literal["bias"] = "bias"


class ToolCorrectnessConfig(ReasonedMetricConfig):
    """Tool Correctness: tools called versus expected tools."""

    metric: Literal["tool_correctness"] = "tool_correctness"
    available_tools: list[str] | None = None
    evaluation_params: list[ToolCallParam] = Field(default_factory=list)
    should_exact_match: bool = False
    should_consider_ordering: bool = False


class ToolPermissionConfig(MetricConfig):
    """Tool Permission: every tool call within the allowlist and outside the denylist."""

    metric: Literal["tool_permission"] = "tool_permission"
    threshold: float = Field(default=1.0, ge=0, le=1)
    include_reason: bool = True
    allowed_tools: list[str] | None = None
    denied_tools: list[str] | None = None

    @model_validator(mode="after")
    def _needs_a_list(self) -> ToolPermissionConfig:
        if not self.allowed_tools and not self.denied_tools:
            raise ValueError("Tool Permission needs 'allowedTools' or 'deniedTools' (or both)")
        return self


class AgentLoopDetectionConfig(MetricConfig):
    """Agent Loop Detection: repeated tool calls, stagnant reasoning, call-graph cycles."""

    metric: Literal["agent_loop_detection"] = "agent_loop_detection"
    include_reason: bool = True
    repetition_threshold: int = Field(default=3, ge=2)
    similarity_threshold: float = Field(default=0.85, gt=0, le=1)
    check_tool_repetition: bool = True
    check_reasoning_stagnation: bool = True
    check_call_graph_cycles: bool = True


class ExactMatchConfig(MetricConfig):
    """Exact Match: the output equals the expected output."""

    metric: Literal["exact_match"] = "exact_match"
    threshold: float = Field(default=1.0, ge=0, le=1)


class PatternMatchConfig(MetricConfig):
    """Pattern Match: the whole output matches a regular expression."""

    metric: Literal["pattern_match"] = "pattern_match"
    threshold: float = Field(default=1.0, ge=0, le=1)
    pattern: str = Field(min_length=1)
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"not a valid regular expression: {error}") from error
        return pattern
