"""RAG metrics: DeepEval's single-turn judges of an answer and the passages behind it.

An n8n RAG agent answers from passages its vector-store tool retrieved; these metrics
judge the generator (Answer Relevancy, Faithfulness) and the retriever (Contextual
Precision, Recall, Relevancy). The fields each one needs are DeepEval 4.3.1's own
``_required_params``, so a missing one is a ``missing_input`` row, never a DeepEval error.

DeepEval's ``evaluation_template`` (a Python class), ``eval_mode`` and
``system_one_model`` (TypeSafe AI's hosted Jev model) are not options here: a benchmark
file names no Python code, and the judge is the pipeline's judge resource.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import ItemField, ReasonedMetricConfig


class AnswerRelevancyConfig(ReasonedMetricConfig):
    """Answer Relevancy: share of the output's statements that address the input."""

    metric: Literal["answer_relevancy"] = "answer_relevancy"


class FaithfulnessConfig(ReasonedMetricConfig):
    """Faithfulness: share of the output's claims the retrieval context does not contradict."""

    metric: Literal["faithfulness"] = "faithfulness"
    truths_extraction_limit: int | None = Field(
        default=None, ge=1, description="Most important truths taken from the context."
    )
    penalize_ambiguous_claims: bool = Field(
        default=False, description="Fail claims the context neither backs nor contradicts."
    )


class ContextualPrecisionConfig(ReasonedMetricConfig):
    """Contextual Precision: passages relevant to the expected output are ranked first."""

    metric: Literal["contextual_precision"] = "contextual_precision"


class ContextualRecallConfig(ReasonedMetricConfig):
    """Contextual Recall: share of the expected output the retrieval context supports."""

    metric: Literal["contextual_recall"] = "contextual_recall"


class ContextualRelevancyConfig(ReasonedMetricConfig):
    """Contextual Relevancy: share of the retrieved statements relevant to the input."""

    metric: Literal["contextual_relevancy"] = "contextual_relevancy"


def _rag(
    name: str,
    implementation: str,
    config: type[ReasonedMetricConfig],
    required: tuple[ItemField, ...],
) -> MetricEntry:
    return MetricEntry(
        name=name,
        category="rag",
        implementation=f"deepeval.metrics.{implementation}",
        needs_judge=True,
        required_fields=required,
        config_model=config,
    )


# The retriever metrics judge passages, not the answer: DeepEval does not read the output.
_RETRIEVER: tuple[ItemField, ...] = ("input", "expected_output", "retrieval_context")

ENTRIES = (
    _rag(
        "Answer Relevancy",
        "AnswerRelevancyMetric",
        AnswerRelevancyConfig,
        ("input", "actual_output"),
    ),
    _rag(
        "Faithfulness",
        "FaithfulnessMetric",
        FaithfulnessConfig,
        ("input", "actual_output", "retrieval_context"),
    ),
    _rag(
        "Contextual Precision", "ContextualPrecisionMetric", ContextualPrecisionConfig, _RETRIEVER
    ),
    _rag("Contextual Recall", "ContextualRecallMetric", ContextualRecallConfig, _RETRIEVER),
    _rag(
        "Contextual Relevancy",
        "ContextualRelevancyMetric",
        ContextualRelevancyConfig,
        ("input", "retrieval_context"),
    ),
)
