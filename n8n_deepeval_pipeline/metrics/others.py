"""Other metrics: summaries, prompt instructions, grounding, and judge-free checks."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.json_schema_model import (
    JsonSchemaError,
    model_from_json_schema,
)
from n8n_deepeval_pipeline.metrics.options import MetricConfig, ReasonedMetricConfig


class SummarizationConfig(ReasonedMetricConfig):
    """Summarization: the output (a summary of the input) is aligned and covers the facts."""

    metric: Literal["summarization"] = "summarization"
    n: int = Field(default=5, ge=1, description="Assessment questions the judge writes.")
    assessment_questions: list[str] | None = Field(
        default=None, min_length=1, description="Your own yes/no questions instead."
    )
    truths_extraction_limit: int | None = Field(
        default=None, ge=1, description="At most this many truths drawn from the input."
    )


class PromptAlignmentConfig(ReasonedMetricConfig):
    """Prompt Alignment: the output follows each instruction of the prompt template."""

    metric: Literal["prompt_alignment"] = "prompt_alignment"
    prompt_instructions: list[str] = Field(
        min_length=1, description="The instructions the answer must follow."
    )


class HallucinationConfig(ReasonedMetricConfig):
    """Hallucination: share of contexts the output contradicts (lower is better)."""

    metric: Literal["hallucination"] = "hallucination"


class ExactMatchConfig(MetricConfig):
    """Exact Match: the output equals the expected output."""

    metric: Literal["exact_match"] = "exact_match"
    threshold: float = Field(default=1.0, ge=0, le=1, description="Pass cutoff.")


class PatternMatchConfig(MetricConfig):
    """Pattern Match: the whole output matches a regular expression."""

    metric: Literal["pattern_match"] = "pattern_match"
    threshold: float = Field(default=1.0, ge=0, le=1, description="Pass cutoff.")
    pattern: str = Field(
        min_length=1, description="A regular expression the whole output must match."
    )
    ignore_case: bool = Field(default=False, description="Match regardless of case.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"not a valid regular expression: {error}") from error
        return pattern


class JsonCorrectnessConfig(ReasonedMetricConfig):
    """JSON Correctness: the output is JSON that fits the expected JSON Schema."""

    metric: Literal["json_correctness"] = "json_correctness"
    expected_schema: dict[str, Any] = Field(
        description="A JSON Schema the output, read as JSON, must satisfy."
    )

    @field_validator("expected_schema")
    @classmethod
    def _supported(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            model_from_json_schema(schema)
        except JsonSchemaError as error:
            raise ValueError(str(error)) from error
        return schema


ENTRIES = (
    MetricEntry(
        name="Summarization",
        category="others",
        implementation="deepeval.metrics.SummarizationMetric",
        needs_judge=True,
        required_fields=("input", "actual_output"),
        config_model=SummarizationConfig,
    ),
    MetricEntry(
        name="Prompt Alignment",
        category="others",
        implementation="deepeval.metrics.PromptAlignmentMetric",
        needs_judge=True,
        required_fields=("input", "actual_output"),
        config_model=PromptAlignmentConfig,
    ),
    MetricEntry(
        name="Hallucination",
        category="others",
        implementation="deepeval.metrics.HallucinationMetric",
        direction="lower_is_better",
        complement_score=True,
        needs_judge=True,
        required_fields=("input", "actual_output", "context"),
        config_model=HallucinationConfig,
    ),
    MetricEntry(
        name="Exact Match",
        category="others",
        implementation="deepeval.metrics.ExactMatchMetric",
        needs_judge=False,
        required_fields=("input", "actual_output", "expected_output"),
        config_model=ExactMatchConfig,
    ),
    MetricEntry(
        name="Pattern Match",
        category="others",
        implementation="deepeval.metrics.PatternMatchMetric",
        needs_judge=False,
        required_fields=("input", "actual_output"),
        config_model=PatternMatchConfig,
    ),
    MetricEntry(
        name="JSON Correctness",
        category="others",
        implementation="deepeval.metrics.JsonCorrectnessMetric",
        needs_judge=False,
        accepts_judge=True,
        required_fields=("input", "actual_output"),
        config_model=JsonCorrectnessConfig,
    ),
)
