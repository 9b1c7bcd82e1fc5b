"""Options every metric config shares, with the seed's names (camelCase in YAML).

Each metric's config model carries its slug as the literal ``metric`` field, so a
benchmark's metric list is one tagged union and an unknown slug is answered with the
closest valid one (``catalog.suggest_slug``). Runtime options of this project
(``cleanSession``, ``label``, ``timeoutS``, and the metric's judge: ``judge``, ``model``,
``judges``, ``panel``) are not passed to DeepEval.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from n8n_deepeval_pipeline.config.model import STRICT_CONFIG, NonBlank
from n8n_deepeval_pipeline.judging.spec import JudgeChoice
from n8n_deepeval_pipeline.statistics.judge_panel import PanelRule

# The metric's own judge or judge panel: the plan resolves them into judge specs.
JUDGE_OPTIONS = frozenset({"judge", "model", "judges", "panel"})
# Options that belong to the runner, never to the DeepEval constructor.
# ``against``: a head-to-head metric's opponent, chosen by the plan.
RUNTIME_OPTIONS = frozenset(
    {"metric", "label", "clean_session", "timeout_s", "against"} | JUDGE_OPTIONS
)
# Options that fill test-case fields (config wins over the item), not constructor arguments.
TEST_CASE_OPTIONS = frozenset({"chatbot_role", "expected_outcome", "retrieval_context"})

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
# Item fields a metric can need, in this project's snake_case.
ItemField = Literal[
    "input",
    "actual_output",
    "expected_output",
    "context",
    "retrieval_context",
    "tools_called",
    "expected_tools",
    "trace",
    "turns",
    "turn_retrieval_context",
    "chatbot_role",
    "expected_outcome",
    "scenario",
    "opponent",  # a head-to-head metric's other run (evaluation.HeadToHead)
    "mcp_servers",  # the MCP servers the agent reached (MCP Client Tool nodes)
    "input_images",  # images the workflow was given (a vision agent's)
    "output_images",  # images in the workflow's answer
]
# Turn and conversation fields a Conversational G-Eval can read (DeepEval 4.3.1 raises on
# CHATBOT_ROLE, CONTEXT and USER_DESCRIPTION there).
MultiTurnParam = Literal[
    "CONTENT", "ROLE", "RETRIEVAL_CONTEXT", "TOOLS_CALLED", "SCENARIO", "EXPECTED_OUTCOME"
]


class MetricConfig(BaseModel):
    """Options every metric has."""

    model_config = STRICT_CONFIG  # as every part of a benchmark file

    metric: str = Field(description="The metric's slug in the catalog.")
    label: NonBlank | None = Field(
        default=None, description="Name of this metric's column in results (default: the slug)."
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="Pass cutoff.")
    strict_mode: bool = Field(
        default=False,
        description="Binary 1/0 scoring; pins the threshold (1, or 0 if lower is better).",
    )
    verbose_mode: bool = Field(
        default=False, description="DeepEval's verbose_mode: it logs the metric's steps."
    )
    clean_session: bool = Field(
        default=False, description="Replace the worker process after this metric's evaluation."
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="Per-evaluation timeout; default is the worker pool's."
    )
    judge: JudgeChoice | None = Field(
        default=None,
        description="This metric's own judge; fields left out come from the benchmark's "
        "judge, then the default judge.",
    )
    model: str | None = Field(
        default=None,
        description="Shorthand for judge: {model: …} (the config-eval playbook's per-metric "
        "model): the benchmark's judge with this model.",
    )
    judges: list[JudgeChoice] | None = Field(
        default=None,
        min_length=2,
        max_length=9,
        description="A judge panel: the metric is scored once per judge and the scores are "
        "combined by 'panel'.",
    )
    panel: PanelRule | None = Field(
        default=None,
        description="How a panel's scores combine: majority (default: the verdict most "
        "judges reach, scored by their mean) or mean (the mean score against the threshold).",
    )

    @model_validator(mode="after")
    def _one_way_to_name_the_judge(self) -> MetricConfig:
        named = [name for name in ("judge", "model", "judges") if getattr(self, name) is not None]
        if len(named) > 1:
            raise ValueError(f"give one of 'judge', 'model' or 'judges', not {' and '.join(named)}")
        if self.panel is not None and self.judges is None:
            raise ValueError("'panel' combines a judge panel: list the judges in 'judges'")
        return self

    def judge_choices(self) -> list[JudgeChoice | None]:
        """The judges this metric names: a panel's, its own, or [None] (the benchmark's)."""
        if self.judges is not None:
            return list(self.judges)
        if self.model is not None:
            return [JudgeChoice(model=self.model)]
        return [self.judge]

    @property
    def panel_rule(self) -> PanelRule | None:
        """How this metric's judges combine, or None when one judge scores it."""
        return (self.panel or "majority") if self.judges is not None else None

    def result_label(self) -> str:
        """The name of this metric's rows in metric_scores."""
        return self.label or self.metric

    def fields_from_options(self) -> tuple[ItemField, ...]:
        """Item fields the options ask for (G-Eval's evaluationParams, a DAG's nodes)."""
        return ()

    def fields_supplied(self) -> frozenset[ItemField]:
        """Item fields the options themselves provide (e.g. chatbotRole set in config)."""
        return frozenset()


class ReasonedMetricConfig(MetricConfig):
    """Options of metrics that can explain their score and run judge calls concurrently."""

    include_reason: bool = Field(
        default=True, description="Ask the judge for the reason behind its score."
    )
    async_mode: bool = Field(
        default=True, description="Let DeepEval make the metric's judge calls concurrently."
    )


class RubricBand(BaseModel):
    """A G-Eval score band: scores in ``scoreRange`` mean ``expectedOutcome``."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    score_range: tuple[int, int] = Field(description="[low, high], within 0-10.")
    expected_outcome: str = Field(
        min_length=1, description="What a score in the range means, for the judge."
    )

    @model_validator(mode="after")
    def _range_within_0_10(self) -> RubricBand:
        low, high = self.score_range
        if not 0 <= low <= high <= 10:
            raise ValueError("scoreRange must be [low, high] with 0 <= low <= high <= 10")
        return self


class WindowedMetricConfig(ReasonedMetricConfig):
    """Conversational metrics that judge a sliding window of turns."""

    window_size: int = Field(default=10, ge=1, description="Turns the judge sees at a time.")


class CriteriaMetricConfig(MetricConfig):
    """G-Eval style: natural-language criteria or fixed evaluation steps, not both."""

    name: NonBlank = Field(description="Metric display name.")
    criteria: NonBlank | None = Field(
        default=None,
        description="What to judge, in words; the judge writes the evaluation steps from it "
        "(give criteria or evaluationSteps).",
    )
    evaluation_steps: list[NonBlank] | None = Field(
        default=None, min_length=1, description="The evaluation steps, written by you."
    )
    rubric: list[RubricBand] | None = Field(
        default=None, description="Score bands (0-10) and what each means."
    )

    @model_validator(mode="after")
    def _criteria_xor_steps(self) -> CriteriaMetricConfig:
        if (self.criteria is None) == (self.evaluation_steps is None):
            raise ValueError(
                f"{self.metric} needs exactly one of 'criteria' or "
                "'evaluationSteps' (not both, not neither)"
            )
        return self
