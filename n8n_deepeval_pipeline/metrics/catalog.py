"""The metric catalog: one entry per metric, as data.

An entry says what a metric needs and how it passes; its config model says which
options it takes. The DeepEval class is named, not imported, so the catalog loads in
the Dagster process without DeepEval; only worker processes build metrics.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline.metrics.configs import (
    AgentLoopDetectionConfig,
    BiasConfig,
    ExactMatchConfig,
    GEvalConfig,
    MetricConfig,
    PatternMatchConfig,
    ToolCorrectnessConfig,
    ToolPermissionConfig,
)

Category = Literal["custom", "agentic", "multi-turn", "safety", "others", "community", "n8n"]
Direction = Literal["higher_is_better", "lower_is_better"]
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
]

MetricSpec = Annotated[
    GEvalConfig
    | BiasConfig
    | ToolCorrectnessConfig
    | ToolPermissionConfig
    | AgentLoopDetectionConfig
    | ExactMatchConfig
    | PatternMatchConfig,
    Field(discriminator="metric"),
]


class MetricEntry(BaseModel):
    """What the pipeline knows about one metric."""

    model_config = ConfigDict(frozen=True)

    name: str
    category: Category
    deepeval_class: str = Field(description="Import path of the DeepEval metric class.")
    direction: Direction = "higher_is_better"
    needs_judge: bool
    accepts_judge: bool = Field(
        default=False,
        description="Takes model= even when no judge call is made (DeepEval asks for an "
        "OpenAI key at construction otherwise).",
    )
    needs_trace: bool = False
    needs_turns: bool = False
    required_fields: tuple[ItemField, ...]
    config_model: type[MetricConfig]

    @property
    def slug(self) -> str:
        """The metric's name in benchmark files, taken from its config model."""
        return str(self.config_model.model_fields["metric"].default)

    def fields_needed(self, config: MetricConfig) -> tuple[ItemField, ...]:
        """Item fields this metric needs with this config (G-Eval adds its evaluationParams)."""
        extra: tuple[ItemField, ...] = ()
        if isinstance(config, GEvalConfig):
            extra = tuple(_G_EVAL_PARAM_FIELDS[param] for param in config.evaluation_params)
        return tuple(dict.fromkeys(self.required_fields + extra))


_G_EVAL_PARAM_FIELDS: dict[str, ItemField] = {
    "INPUT": "input",
    "ACTUAL_OUTPUT": "actual_output",
    "EXPECTED_OUTPUT": "expected_output",
    "CONTEXT": "context",
    "RETRIEVAL_CONTEXT": "retrieval_context",
    "TOOLS_CALLED": "tools_called",
    "EXPECTED_TOOLS": "expected_tools",
}

_ENTRIES = (
    MetricEntry(
        name="G-Eval",
        category="custom",
        deepeval_class="deepeval.metrics.GEval",
        needs_judge=True,
        required_fields=("actual_output",),
        config_model=GEvalConfig,
    ),
    MetricEntry(
        name="Tool Correctness",
        category="agentic",
        deepeval_class="deepeval.metrics.ToolCorrectnessMetric",
        needs_judge=False,
        accepts_judge=True,
        required_fields=("input", "tools_called", "expected_tools"),
        config_model=ToolCorrectnessConfig,
    ),
    MetricEntry(
        name="Bias",
        category="safety",
        deepeval_class="deepeval.metrics.BiasMetric",
        direction="lower_is_better",
        needs_judge=True,
        required_fields=("input", "actual_output"),
        config_model=BiasConfig,
    ),
    MetricEntry(
        name="Agent Loop Detection",
        category="community",
        deepeval_class="deepeval.metrics.AgentLoopDetectionMetric",
        needs_judge=False,
        needs_trace=True,
        required_fields=("input", "actual_output", "trace"),
        config_model=AgentLoopDetectionConfig,
    ),
    MetricEntry(
        name="Tool Permission",
        category="community",
        deepeval_class="deepeval.metrics.ToolPermissionMetric",
        needs_judge=False,
        required_fields=("tools_called",),
        config_model=ToolPermissionConfig,
    ),
    MetricEntry(
        name="Exact Match",
        category="others",
        deepeval_class="deepeval.metrics.ExactMatchMetric",
        needs_judge=False,
        required_fields=("input", "actual_output", "expected_output"),
        config_model=ExactMatchConfig,
    ),
    MetricEntry(
        name="Pattern Match",
        category="others",
        deepeval_class="deepeval.metrics.PatternMatchMetric",
        needs_judge=False,
        required_fields=("input", "actual_output"),
        config_model=PatternMatchConfig,
    ),
)


def _index(entries: tuple[MetricEntry, ...]) -> dict[str, MetricEntry]:
    catalog: dict[str, MetricEntry] = {}
    for entry in entries:
        if entry.slug in catalog:
            raise ValueError(f"duplicate metric slug in the catalog: {entry.slug}")
        catalog[entry.slug] = entry
    return catalog


CATALOG: dict[str, MetricEntry] = _index(_ENTRIES)


def entry_for(config: MetricConfig) -> MetricEntry:
    """The catalog entry of a validated metric config."""
    return CATALOG[config.metric]
