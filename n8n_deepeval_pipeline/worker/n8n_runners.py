"""Runners of n8n's built-in evaluation metrics (worker side only).

Each takes the metric's config, the item and the judge, and returns a score in 0–1
with a reason. Scoring rules live in ``metrics.n8n_scoring``.
"""

from __future__ import annotations

from typing import Any

from deepeval.models import DeepEvalBaseLLM

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics import n8n_scoring
from n8n_deepeval_pipeline.metrics.n8n import CorrectnessConfig, HelpfulnessConfig
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.worker.test_cases import tool_names

Scored = tuple[float, str]


def _judge(
    judge: DeepEvalBaseLLM,
    config: CorrectnessConfig | HelpfulnessConfig,
    system: str,
    template: str,
    values: dict[str, str],
) -> Scored:
    prompt = f"{config.prompt or system}\n\n{(config.input_prompt or template).format(**values)}"
    answer = judge.generate(prompt, schema=n8n_scoring.JudgeVerdict)
    verdict = (
        answer
        if isinstance(answer, n8n_scoring.JudgeVerdict)
        else n8n_scoring.JudgeVerdict.model_validate_json(str(answer))
    )
    score = n8n_scoring.judge_score(verdict, config.output_type, config.pass_from)
    return score, f"{verdict.score}/5: {verdict.reasoning_summary}"


def correctness(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """The correctness preset: the answer against the expected answer, judged 1–5."""
    assert isinstance(config, CorrectnessConfig)
    values = {
        "actual_answer": (item.actual_output or "").strip(),
        "expected_answer": (item.expected_output or "").strip(),
    }
    return _judge(
        judge, config, n8n_scoring.CORRECTNESS_PROMPT, n8n_scoring.CORRECTNESS_INPUT, values
    )


def helpfulness(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """The helpfulness preset: the answer against the user's request, judged 1–5."""
    assert isinstance(config, HelpfulnessConfig)
    values = {
        "user_query": str(item.input or "").strip(),
        "actual_answer": (item.actual_output or "").strip(),
    }
    return _judge(
        judge, config, n8n_scoring.HELPFULNESS_PROMPT, n8n_scoring.HELPFULNESS_INPUT, values
    )


def string_similarity(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """Edit-distance similarity of the output and the expected output."""
    score = n8n_scoring.string_similarity(item.expected_output or "", item.actual_output or "")
    return score, f"edit-distance similarity {score:.3f}"


def categorization(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """Exact match of the output and the expected category."""
    score = n8n_scoring.categorization(item.expected_output or "", item.actual_output or "")
    verb = "matches" if score else "does not match"
    return score, f"output {verb} the expected category {(item.expected_output or '').strip()!r}"


def tools_used(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """Share of the expected tools the agent called."""
    expected = item.expected_tools or []
    called = tool_names(item)
    score = n8n_scoring.tools_used(expected, called)
    return score, f"called {called or 'no tools'}; expected {expected}"
