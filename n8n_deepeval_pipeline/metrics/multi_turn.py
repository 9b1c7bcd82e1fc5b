"""Multi-turn metrics: a chatbot judged over a whole conversation (from n8n memory)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import (
    ItemField,
    MetricConfig,
    ReasonedMetricConfig,
    WindowedMetricConfig,
)


class TurnRelevancyConfig(WindowedMetricConfig):
    """Turn Relevancy: each assistant reply is relevant to the turns before it."""

    metric: Literal["turn_relevancy"] = "turn_relevancy"


class RoleAdherenceConfig(ReasonedMetricConfig):
    """Role Adherence: the assistant stays in character (chatbotRole from config or item)."""

    metric: Literal["role_adherence"] = "role_adherence"
    chatbot_role: str | None = Field(
        default=None,
        min_length=1,
        description="The role the assistant should keep (default: the row's chatbotRole).",
    )

    def fields_supplied(self) -> frozenset[ItemField]:
        return frozenset({"chatbot_role"}) if self.chatbot_role else frozenset()


class KnowledgeRetentionConfig(ReasonedMetricConfig):
    """Knowledge Retention: the bot remembers what the user already said."""

    metric: Literal["knowledge_retention"] = "knowledge_retention"


class ConversationCompletenessConfig(WindowedMetricConfig):
    """Conversation Completeness: every user intention was satisfied."""

    metric: Literal["conversation_completeness"] = "conversation_completeness"
    window_size: int = Field(default=3, ge=1, description="Turns the judge sees at a time.")


class GoalAccuracyConfig(ReasonedMetricConfig):
    """Goal Accuracy: the agent reached the user's goal with a sound plan."""

    metric: Literal["goal_accuracy"] = "goal_accuracy"


class ToolUseConfig(ReasonedMetricConfig):
    """Tool Use: tool selection and arguments per interaction, against the available tools."""

    metric: Literal["tool_use"] = "tool_use"
    available_tools: list[str] = Field(
        min_length=1, description="The tools the assistant could use."
    )


class TopicAdherenceConfig(ReasonedMetricConfig):
    """Topic Adherence: answers on-topic questions, refuses off-topic ones."""

    metric: Literal["topic_adherence"] = "topic_adherence"
    relevant_topics: list[str] = Field(
        min_length=1, description="The topics the assistant should answer about."
    )


class TurnFaithfulnessConfig(WindowedMetricConfig):
    """Turn Faithfulness: assistant claims are grounded in each turn's retrieval context.

    As in the seed, the retrieval context may be set in the config: it goes on the
    assistant turns that carry none of their own (a memory message's own context wins),
    in place of the row's ``retrievalContext``.
    """

    metric: Literal["turn_faithfulness"] = "turn_faithfulness"
    truths_extraction_limit: int | None = Field(
        default=None, ge=1, description="At most this many truths drawn from the context."
    )
    penalize_ambiguous_claims: bool = Field(
        default=False, description="A claim the context neither backs nor contradicts fails."
    )
    retrieval_context: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Retrieval context for assistant turns without their own (default: the "
        "row's retrievalContext).",
    )


class _ExpectedOutcomeConfig(WindowedMetricConfig):
    expected_outcome: str | None = Field(
        default=None,
        min_length=1,
        description="What the conversation should achieve (default: the row's).",
    )

    def fields_supplied(self) -> frozenset[ItemField]:
        return frozenset({"expected_outcome"}) if self.expected_outcome else frozenset()


class TurnContextualPrecisionConfig(_ExpectedOutcomeConfig):
    """Turn Contextual Precision: relevant retrieved passages ranked first, per turn."""

    metric: Literal["turn_contextual_precision"] = "turn_contextual_precision"


class TurnContextualRecallConfig(_ExpectedOutcomeConfig):
    """Turn Contextual Recall: retrieved context supports the expected outcome, per turn."""

    metric: Literal["turn_contextual_recall"] = "turn_contextual_recall"


class TurnContextualRelevancyConfig(WindowedMetricConfig):
    """Turn Contextual Relevancy: signal-to-noise of each turn's retrieval context."""

    metric: Literal["turn_contextual_relevancy"] = "turn_contextual_relevancy"


def _conversation_metric(
    name: str,
    implementation: str,
    config: type[MetricConfig],
    *extra: ItemField,
) -> MetricEntry:
    return MetricEntry(
        name=name,
        category="multi-turn",
        implementation=f"deepeval.metrics.{implementation}",
        needs_judge=True,
        needs_turns=True,
        required_fields=("turns", *extra),
        config_model=config,
    )


ENTRIES = (
    _conversation_metric("Turn Relevancy", "TurnRelevancyMetric", TurnRelevancyConfig),
    _conversation_metric(
        "Role Adherence", "RoleAdherenceMetric", RoleAdherenceConfig, "chatbot_role"
    ),
    _conversation_metric(
        "Knowledge Retention", "KnowledgeRetentionMetric", KnowledgeRetentionConfig
    ),
    _conversation_metric(
        "Conversation Completeness",
        "ConversationCompletenessMetric",
        ConversationCompletenessConfig,
    ),
    _conversation_metric("Goal Accuracy", "GoalAccuracyMetric", GoalAccuracyConfig),
    _conversation_metric("Tool Use", "ToolUseMetric", ToolUseConfig),
    _conversation_metric("Topic Adherence", "TopicAdherenceMetric", TopicAdherenceConfig),
    _conversation_metric(
        "Turn Faithfulness",
        "TurnFaithfulnessMetric",
        TurnFaithfulnessConfig,
        "turn_retrieval_context",
    ),
    _conversation_metric(
        "Turn Contextual Precision",
        "TurnContextualPrecisionMetric",
        TurnContextualPrecisionConfig,
        "turn_retrieval_context",
        "expected_outcome",
    ),
    _conversation_metric(
        "Turn Contextual Recall",
        "TurnContextualRecallMetric",
        TurnContextualRecallConfig,
        "turn_retrieval_context",
        "expected_outcome",
    ),
    _conversation_metric(
        "Turn Contextual Relevancy",
        "TurnContextualRelevancyMetric",
        TurnContextualRelevancyConfig,
        "turn_retrieval_context",
    ),
)
