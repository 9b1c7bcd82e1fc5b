"""n8n's built-in evaluation metrics: the config-eval judge presets and the checks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import MetricConfig

_RUNNERS = "n8n_deepeval_pipeline.worker.n8n_runners"


class _JudgePresetConfig(MetricConfig):
    prompt: str | None = Field(default=None, min_length=1, description="Replaces the judge prompt.")
    input_prompt: str | None = Field(
        default=None, min_length=1, description="Template of the judged text (placeholders)."
    )
    output_type: Literal["numeric", "boolean"] = Field(
        default="numeric", description="numeric: score 1–5 as score/5; boolean: 1 or 0."
    )
    pass_from: int = Field(
        default=4, ge=1, le=5, description="With outputType boolean: lowest passing 1–5 score."
    )

    def placeholders(self) -> tuple[str, ...]:
        """The placeholders ``inputPrompt`` must contain."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _placeholders_present(self) -> _JudgePresetConfig:
        if self.input_prompt is not None:
            missing = [p for p in self.placeholders() if f"{{{p}}}" not in self.input_prompt]
            if missing:
                names = ", ".join(f"{{{p}}}" for p in missing)
                raise ValueError(f"{self.metric}: inputPrompt must contain {names}")
        return self


class CorrectnessConfig(_JudgePresetConfig):
    """Correctness (n8n preset): the answer states the facts of the expected answer."""

    metric: Literal["correctness"] = "correctness"

    def placeholders(self) -> tuple[str, ...]:
        return ("actual_answer", "expected_answer")


class HelpfulnessConfig(_JudgePresetConfig):
    """Helpfulness (n8n preset): the answer meets the user's request."""

    metric: Literal["helpfulness"] = "helpfulness"

    def placeholders(self) -> tuple[str, ...]:
        return ("user_query", "actual_answer")


class StringSimilarityConfig(MetricConfig):
    """String similarity (n8n): 1 − edit distance / longer length."""

    metric: Literal["string_similarity"] = "string_similarity"


class CategorizationConfig(MetricConfig):
    """Categorization (n8n): 1 when the output equals the expected category, else 0."""

    metric: Literal["categorization"] = "categorization"


class ToolsUsedConfig(MetricConfig):
    """Tools used (n8n): share of the expected tools the agent called."""

    metric: Literal["tools_used"] = "tools_used"


def _n8n(
    name: str, runner: str, config: type[MetricConfig], needs_judge: bool, *fields: str
) -> MetricEntry:
    return MetricEntry.model_validate(
        {
            "name": name,
            "category": "n8n",
            "implementation": f"{_RUNNERS}.{runner}",
            "kind": "n8n",
            "needs_judge": needs_judge,
            "required_fields": fields,
            "config_model": config,
        }
    )


ENTRIES = (
    _n8n("Correctness", "correctness", CorrectnessConfig, True, "actual_output", "expected_output"),
    _n8n("Helpfulness", "helpfulness", HelpfulnessConfig, True, "input", "actual_output"),
    _n8n(
        "String Similarity",
        "string_similarity",
        StringSimilarityConfig,
        False,
        "actual_output",
        "expected_output",
    ),
    _n8n(
        "Categorization",
        "categorization",
        CategorizationConfig,
        False,
        "actual_output",
        "expected_output",
    ),
    _n8n("Tools Used", "tools_used", ToolsUsedConfig, False, "tools_called", "expected_tools"),
)
