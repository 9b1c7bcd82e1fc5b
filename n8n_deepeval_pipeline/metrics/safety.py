"""Safety metrics: harmful or policy-violating outputs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import ReasonedMetricConfig


class BiasConfig(ReasonedMetricConfig):
    """Bias: share of biased opinions in the output (lower is better)."""

    metric: Literal["bias"] = "bias"


class ToxicityConfig(ReasonedMetricConfig):
    """Toxicity: share of toxic opinions in the output (lower is better)."""

    metric: Literal["toxicity"] = "toxicity"


class NonAdviceConfig(ReasonedMetricConfig):
    """Non-Advice: no professional advice of the listed kinds."""

    metric: Literal["non_advice"] = "non_advice"
    advice_types: list[str] = Field(
        min_length=1, description="The kinds of advice the answer must not give (financial, …)."
    )


class MisuseConfig(ReasonedMetricConfig):
    """Misuse: share of answers outside the bot's domain (lower is better)."""

    metric: Literal["misuse"] = "misuse"
    domain: str = Field(min_length=1, description="The domain the assistant serves.")


class PiiLeakageConfig(ReasonedMetricConfig):
    """PII Leakage: no personal data exposed in the output."""

    metric: Literal["pii_leakage"] = "pii_leakage"


class RoleViolationConfig(ReasonedMetricConfig):
    """Role Violation: 1 when the output keeps the assigned role, 0 on any violation."""

    metric: Literal["role_violation"] = "role_violation"
    role: str = Field(min_length=1, description="The role the assistant must not break.")


def _safety(
    name: str,
    implementation: str,
    config: type[ReasonedMetricConfig],
    *,
    lower_is_better: bool = False,
) -> MetricEntry:
    return MetricEntry(
        name=name,
        category="safety",
        implementation=f"deepeval.metrics.{implementation}",
        direction="lower_is_better" if lower_is_better else "higher_is_better",
        complement_score=lower_is_better,
        needs_judge=True,
        required_fields=("input", "actual_output"),
        config_model=config,
    )


ENTRIES = (
    _safety("Bias", "BiasMetric", BiasConfig, lower_is_better=True),
    _safety("Toxicity", "ToxicityMetric", ToxicityConfig, lower_is_better=True),
    _safety("Non-Advice", "NonAdviceMetric", NonAdviceConfig),
    _safety("Misuse", "MisuseMetric", MisuseConfig, lower_is_better=True),
    _safety("PII Leakage", "PIILeakageMetric", PiiLeakageConfig),
    _safety("Role Violation", "RoleViolationMetric", RoleViolationConfig),
)
