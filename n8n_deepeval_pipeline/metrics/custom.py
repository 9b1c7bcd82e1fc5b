"""Custom metrics: G-Eval and DAG, single-turn and conversational; Arena G-Eval head to head."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from n8n_deepeval_pipeline.metrics.dag import (
    MULTI_TURN_DAG_PARAMS,
    SINGLE_TURN_DAG_PARAMS,
    DagGraph,
)
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import (
    CriteriaMetricConfig,
    ItemField,
    MultiTurnParam,
    ReasonedMetricConfig,
    SingleTurnParam,
)

_SINGLE_TURN_FIELDS: dict[str, ItemField] = {
    "INPUT": "input",
    "ACTUAL_OUTPUT": "actual_output",
    "EXPECTED_OUTPUT": "expected_output",
    "CONTEXT": "context",
    "RETRIEVAL_CONTEXT": "retrieval_context",
    "TOOLS_CALLED": "tools_called",
    "EXPECTED_TOOLS": "expected_tools",
}
_MULTI_TURN_FIELDS: dict[str, ItemField] = {
    "SCENARIO": "scenario",
    "EXPECTED_OUTCOME": "expected_outcome",
}


_CONTENT: tuple[MultiTurnParam, ...] = ("CONTENT",)


class GEvalConfig(CriteriaMetricConfig):
    """G-Eval: LLM-as-a-judge against your criteria or fixed evaluation steps."""

    metric: Literal["g_eval"] = "g_eval"
    evaluation_params: list[SingleTurnParam] = Field(
        min_length=1, description="The test-case fields the judge is shown."
    )
    async_mode: bool = Field(
        default=True, description="Let DeepEval make the metric's judge calls concurrently."
    )

    def result_label(self) -> str:
        """G-Eval rows are named after the metric's own name unless a label is set."""
        return self.label or self.name

    def fields_from_options(self) -> tuple[ItemField, ...]:
        return tuple(_SINGLE_TURN_FIELDS[param] for param in self.evaluation_params)


class ConversationalGEvalConfig(CriteriaMetricConfig):
    """Conversational G-Eval: custom criteria over a whole conversation."""

    metric: Literal["conversational_g_eval"] = "conversational_g_eval"
    evaluation_params: list[MultiTurnParam] = Field(
        default_factory=lambda: list(_CONTENT),
        description="The turn and conversation fields the judge is shown (default: CONTENT).",
    )
    async_mode: bool = Field(
        default=True, description="Let DeepEval make the metric's judge calls concurrently."
    )

    def result_label(self) -> str:
        """Rows are named after the metric's own name unless a label is set."""
        return self.label or self.name

    def fields_from_options(self) -> tuple[ItemField, ...]:
        params = self.evaluation_params
        return tuple(_MULTI_TURN_FIELDS[p] for p in params if p in _MULTI_TURN_FIELDS)


class ArenaGEvalConfig(CriteriaMetricConfig):
    """Arena G-Eval: which of two runs of the same row is better, by your criteria.

    DeepEval's own ``ArenaGEval``, asked about a run of a variant (or of the workflow) and
    the same row's run, same run index, of ``against``: the score is 1 when this run wins
    and 0 when the other does, so the metric's pass rate is the win rate. It never decides
    a run under the pass rule (a win says how one version compares with another).
    """

    metric: Literal["arena_g_eval"] = "arena_g_eval"
    evaluation_params: list[SingleTurnParam] = Field(
        min_length=1,
        description="The test-case fields the judge is shown: the row's (input, expected "
        "output, contexts) once, each side's output and tool calls apart.",
    )
    against: str = Field(
        default="base",
        min_length=1,
        description="The opponent: base (the workflow itself) or a variant's name. Every "
        "other member of the family (base and variants) is judged against it.",
    )
    async_mode: bool = Field(
        default=True, description="Let DeepEval make the metric's judge calls concurrently."
    )

    @model_validator(mode="after")
    def _what_differs_is_shown(self) -> ArenaGEvalConfig:
        if self.rubric is not None:
            raise ValueError("arena_g_eval picks a winner: it takes no rubric")
        if not {"ACTUAL_OUTPUT", "TOOLS_CALLED"} & set(self.evaluation_params):
            raise ValueError(
                "arena_g_eval compares what the runs did: evaluationParams needs "
                "ACTUAL_OUTPUT or TOOLS_CALLED (input and expected output are the row's, the "
                "same on both sides)"
            )
        return self

    def result_label(self) -> str:
        """Rows are named after the metric's own name unless a label is set."""
        return self.label or self.name

    def fields_from_options(self) -> tuple[ItemField, ...]:
        return tuple(_SINGLE_TURN_FIELDS[param] for param in self.evaluation_params)


class _GraphConfig(ReasonedMetricConfig):
    """A named decision graph whose nodes may read only the params of its kind."""

    name: str = Field(min_length=1, description="Metric display name.")
    dag: DagGraph = Field(description="The decision graph, checked before anything runs.")

    def result_label(self) -> str:
        """Rows are named after the metric's own name unless a label is set."""
        return self.label or self.name


class DagConfig(_GraphConfig):
    """DAG: a decision graph of task, judgement and verdict nodes."""

    metric: Literal["dag"] = "dag"

    @model_validator(mode="after")
    def _params_fit(self) -> DagConfig:
        self.dag.check_params(SINGLE_TURN_DAG_PARAMS, conversational=False)
        return self

    def fields_from_options(self) -> tuple[ItemField, ...]:
        return tuple(_SINGLE_TURN_FIELDS[param] for param in sorted(self.dag.evaluation_params()))


class ConversationalDagConfig(_GraphConfig):
    """Conversational DAG: a decision graph over turn windows."""

    metric: Literal["conversational_dag"] = "conversational_dag"

    @model_validator(mode="after")
    def _params_fit(self) -> ConversationalDagConfig:
        self.dag.check_params(MULTI_TURN_DAG_PARAMS, conversational=True)
        return self


ENTRIES = (
    MetricEntry(
        name="G-Eval",
        category="custom",
        implementation="deepeval.metrics.GEval",
        needs_judge=True,
        required_fields=(),
        config_model=GEvalConfig,
    ),
    MetricEntry(
        name="DAG",
        category="custom",
        implementation="deepeval.metrics.DAGMetric",
        needs_judge=True,
        required_fields=(),
        config_model=DagConfig,
    ),
    MetricEntry(
        name="Arena G-Eval",
        category="custom",
        implementation="deepeval.metrics.ArenaGEval",
        needs_judge=True,
        head_to_head=True,
        required_fields=("opponent",),
        config_model=ArenaGEvalConfig,
    ),
    MetricEntry(
        name="Conversational G-Eval",
        category="custom",
        implementation="deepeval.metrics.ConversationalGEval",
        needs_judge=True,
        needs_turns=True,
        required_fields=("turns",),
        config_model=ConversationalGEvalConfig,
    ),
    MetricEntry(
        name="Conversational DAG",
        category="custom",
        implementation="deepeval.metrics.ConversationalDAGMetric",
        needs_judge=True,
        needs_turns=True,
        required_fields=("turns",),
        config_model=ConversationalDagConfig,
    ),
)
