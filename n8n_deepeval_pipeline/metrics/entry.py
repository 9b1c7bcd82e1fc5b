"""What the pipeline knows about one metric: a catalog entry, as data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.options import ItemField, MetricConfig
from n8n_deepeval_pipeline.statistics.pass_direction import Direction

Category = Literal[
    "custom",
    "agentic",
    "multi-turn",
    "rag",
    "safety",
    "others",
    "community",
    "mcp",
    "images",
    "n8n",
]
Scored = tuple[float, str]
# This project's own metrics: (config, item, judge or None) → (score, reason).
Runner = Callable[[MetricConfig, EvaluationItem, Any], Scored]


class MetricEntry(BaseModel):
    """One metric: how it is run, what it needs, how it passes."""

    model_config = ConfigDict(frozen=True)

    name: str
    category: Category
    implementation: str | None = Field(
        default=None, description="Import path of the DeepEval metric class (imported lazily)."
    )
    runner: Runner | None = Field(default=None, description="This project's own scoring.")
    direction: Direction = "higher_is_better"
    complement_score: bool = Field(
        default=False,
        description="DeepEval 4.3.1 scores the complement of the seed's definition (e.g. the "
        "share of unbiased opinions); the pipeline reports 1 − score so the seed's "
        "lower-is-better meaning holds.",
    )
    needs_judge: bool
    accepts_judge: bool = Field(
        default=False,
        description="Takes model= even when no judge call is made (DeepEval asks for an "
        "OpenAI key at construction otherwise).",
    )
    head_to_head: bool = Field(
        default=False,
        description="Judges a run against the same row's run of another variant (DeepEval's "
        "arena metrics): the score is 1 for a win, 0 for a loss, and it decides no run.",
    )
    needs_trace: bool = False
    needs_turns: bool = False
    required_fields: tuple[ItemField, ...]
    config_model: type[MetricConfig]

    @model_validator(mode="after")
    def _one_way_to_run(self) -> MetricEntry:
        if (self.implementation is None) == (self.runner is None):
            raise ValueError(f"{self.name}: give either a DeepEval implementation or a runner")
        return self

    @property
    def slug(self) -> str:
        """The metric's name in benchmark files, taken from its config model."""
        return str(self.config_model.model_fields["metric"].default)

    def fields_needed(self, config: MetricConfig) -> tuple[ItemField, ...]:
        """Item fields this metric needs with this config."""
        needed = self.required_fields + config.fields_from_options()
        supplied = config.fields_supplied()
        return tuple(field for field in dict.fromkeys(needed) if field not in supplied)
