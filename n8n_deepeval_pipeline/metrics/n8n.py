"""n8n's built-in evaluation metrics: each config beside the runner that scores it.

Scored as n8n's Evaluation node scores them:
- string similarity: 1 − Levenshtein distance / length of the longer string (trimmed,
  case-sensitive; two empty strings are identical);
- categorization: 1 when the trimmed strings are equal, else 0;
- tools used: share of expected tools called at least once; names compare without case
  after n8n's node-name → tool-name rule (see ``n8n_data.agent_steps.tool_name``);
- the correctness and helpfulness presets: an LLM judge answers 1–5, normalised as n8n
  normalises it (score / 5), or pass/fail for ``outputType: boolean``. Their
  ``actualAnswer``, ``expectedAnswer`` and ``userQuery`` are n8n expressions over the
  run's item (``={{ $json.output }}``, see ``n8n_data.expressions``), evaluated when the
  tasks are planned (``tables.run_items``).

Runners run in the workers; they take the judge as an argument and import no DeepEval.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from rapidfuzz.distance import Levenshtein

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.entry import MetricEntry, Runner, Scored
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.n8n_data.agent_steps import called_tool_names, tool_name
from n8n_deepeval_pipeline.n8n_data.expressions import (
    Expression,
    ExpressionError,
    parse_expression,
)

_EXPRESSION_HELP = (
    "An n8n expression over the run's item ($json paths, 'text' and +), e.g. "
    "'={{ $json.output }}'; text without '=' is used as it is."
)


def _expression_field(default_source: str) -> Any:
    return Field(default=None, description=f"{_EXPRESSION_HELP} Default: {default_source}.")


class JudgePresetConfig(MetricConfig):
    """Options the correctness and helpfulness presets share."""

    actual_answer: str | None = _expression_field("the run's output")
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

    def expression_options(self) -> dict[str, str]:
        """Each expression option (snake_case) → the item field it fills."""
        return {"actual_answer": "actual_output"}

    def item_expressions(self) -> dict[str, tuple[str, Expression]]:
        """Item field → (option's name in the file, parsed expression), for the options set."""
        fields = type(self).model_fields
        expressions = {}
        for option, item_field in self.expression_options().items():
            text = getattr(self, option)
            if text is not None:
                expressions[item_field] = (str(fields[option].alias), parse_expression(text))
        return expressions

    @field_validator("actual_answer", "expected_answer", "user_query", check_fields=False)
    @classmethod
    def _supported_expression(cls, text: str | None) -> str | None:
        if text is not None:
            try:
                parse_expression(text)
            except ExpressionError as error:
                raise ValueError(str(error)) from None
        return text

    @model_validator(mode="after")
    def _placeholders_present(self) -> JudgePresetConfig:
        if self.input_prompt is not None:
            missing = [p for p in self.placeholders() if f"{{{p}}}" not in self.input_prompt]
            if missing:
                names = ", ".join(f"{{{p}}}" for p in missing)
                raise ValueError(f"{self.metric}: inputPrompt must contain {names}")
        return self


class CorrectnessConfig(JudgePresetConfig):
    """Correctness (n8n preset): the answer states the facts of the expected answer."""

    metric: Literal["correctness"] = "correctness"
    expected_answer: str | None = _expression_field("the row's expectedOutput")

    def placeholders(self) -> tuple[str, ...]:
        return ("actual_answer", "expected_answer")

    def expression_options(self) -> dict[str, str]:
        return {**super().expression_options(), "expected_answer": "expected_output"}


class HelpfulnessConfig(JudgePresetConfig):
    """Helpfulness (n8n preset): the answer meets the user's request."""

    metric: Literal["helpfulness"] = "helpfulness"
    user_query: str | None = _expression_field("the row's input")

    def placeholders(self) -> tuple[str, ...]:
        return ("user_query", "actual_answer")

    def expression_options(self) -> dict[str, str]:
        return {**super().expression_options(), "user_query": "input"}


class StringSimilarityConfig(MetricConfig):
    """String similarity (n8n): 1 − edit distance / longer length."""

    metric: Literal["string_similarity"] = "string_similarity"


class CategorizationConfig(MetricConfig):
    """Categorization (n8n): 1 when the output equals the expected category, else 0."""

    metric: Literal["categorization"] = "categorization"


class ToolsUsedConfig(MetricConfig):
    """Tools used (n8n): share of the expected tools the agent called."""

    metric: Literal["tools_used"] = "tools_used"


def string_similarity(expected: str, actual: str) -> float:
    """1 − edit distance / max length, on trimmed strings."""
    expected, actual = expected.strip(), actual.strip()
    longer = max(len(expected), len(actual))
    return 1.0 if longer == 0 else 1.0 - Levenshtein.distance(expected, actual) / longer


def categorization(expected: str, actual: str) -> float:
    """1.0 for an exact (trimmed, case-sensitive) match, else 0.0."""
    return 1.0 if expected.strip() == actual.strip() else 0.0


def tools_used(expected: list[str], called: list[str]) -> float:
    """Share of expected tools that were called at least once (extra calls are free)."""
    if not expected:
        raise ValueError("tools used needs at least one expected tool")
    called_names = {name.lower() for name in called}
    hits = sum(1 for name in expected if tool_name(name).lower() in called_names)
    return hits / len(expected)


class JudgeVerdict(BaseModel):
    """What n8n's correctness and helpfulness judges answer."""

    extended_reasoning: str = Field(description="detailed step-by-step analysis")
    reasoning_summary: str = Field(description="one sentence summary")
    score: int = Field(ge=1, le=5, description="integer from 1 to 5")


def judge_score(verdict: JudgeVerdict, output_type: str, pass_from: int) -> float:
    """A 1–5 judgement as a 0–1 score: score / 5, or 1/0 against ``pass_from``."""
    if output_type == "boolean":
        return 1.0 if verdict.score >= pass_from else 0.0
    return verdict.score / 5


# The presets' rubrics follow n8n's 1–5 scales; the wording is this project's own.
CORRECTNESS_PROMPT = """You judge whether an answer states the same facts as a reference answer.

Rate the answer from 1 to 5:
5 - same facts as the reference; differences are wording only.
4 - mostly the same facts, with a few small differences.
3 - the main point matches, but some facts differ or are missing.
2 - only a few facts match; most differ or are missing.
1 - the facts do not match the reference.

Work through it: list the facts in each answer, compare them one by one (names, numbers,
dates, relations), ignore style and phrasing, then decide the score.

Reply with JSON only, with the keys "extended_reasoning" (your step-by-step comparison),
"reasoning_summary" (one sentence on the key differences) and "score" (an integer 1-5)."""

HELPFULNESS_PROMPT = """You judge how helpful a response is to the request it answers.

Rate the response from 1 to 5:
5 - fully meets the request with complete, actionable information.
4 - meets most of the request; relevant and useful.
3 - meets part of the request; useful but incomplete or shallow.
2 - little useful information; touches the request only in part.
1 - does not meet the request, or is irrelevant.

Work through it: work out what the user needs, check what the response gives against that
(completeness, accuracy, relevance, next steps), then decide the score.

Reply with JSON only, with the keys "extended_reasoning" (your step-by-step assessment),
"reasoning_summary" (one sentence on its main strength or weakness) and "score" (an integer
1-5)."""

CORRECTNESS_INPUT = "Answer: {actual_answer}\n\nReference answer: {expected_answer}"
HELPFULNESS_INPUT = "Request: {user_query}\n\nResponse: {actual_answer}"


def _judge(
    judge: Any,
    config: CorrectnessConfig | HelpfulnessConfig,
    system: str,
    template: str,
    values: dict[str, str],
) -> Scored:
    prompt = f"{config.prompt or system}\n\n{(config.input_prompt or template).format(**values)}"
    answer = judge.generate(prompt, schema=JudgeVerdict)
    verdict = (
        answer
        if isinstance(answer, JudgeVerdict)
        else JudgeVerdict.model_validate_json(str(answer))
    )
    score = judge_score(verdict, config.output_type, config.pass_from)
    return score, f"{verdict.score}/5: {verdict.reasoning_summary}"


def run_correctness(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """The correctness preset: the answer against the expected answer, judged 1–5."""
    assert isinstance(config, CorrectnessConfig)
    values = {
        "actual_answer": (item.actual_output or "").strip(),
        "expected_answer": (item.expected_output or "").strip(),
    }
    return _judge(judge, config, CORRECTNESS_PROMPT, CORRECTNESS_INPUT, values)


def run_helpfulness(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """The helpfulness preset: the answer against the user's request, judged 1–5."""
    assert isinstance(config, HelpfulnessConfig)
    values = {
        "user_query": str(item.input or "").strip(),
        "actual_answer": (item.actual_output or "").strip(),
    }
    return _judge(judge, config, HELPFULNESS_PROMPT, HELPFULNESS_INPUT, values)


def run_string_similarity(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """Edit-distance similarity of the output and the expected output."""
    score = string_similarity(item.expected_output or "", item.actual_output or "")
    return score, f"edit-distance similarity {score:.3f}"


def run_categorization(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """Exact match of the output and the expected category."""
    score = categorization(item.expected_output or "", item.actual_output or "")
    verb = "matches" if score else "does not match"
    return score, f"output {verb} the expected category {(item.expected_output or '').strip()!r}"


def run_tools_used(config: MetricConfig, item: EvaluationItem, judge: Any) -> Scored:
    """Share of the expected tools the agent called."""
    expected = item.expected_tools or []
    called = called_tool_names(item.intermediate_steps)
    score = tools_used(expected, called)
    return score, f"called {called or 'no tools'}; expected {expected}"


def _n8n(
    name: str, runner: Runner, config: type[MetricConfig], needs_judge: bool, *fields: str
) -> MetricEntry:
    return MetricEntry.model_validate(
        {
            "name": name,
            "category": "n8n",
            "runner": runner,
            "needs_judge": needs_judge,
            "required_fields": fields,
            "config_model": config,
        }
    )


ENTRIES = (
    _n8n(
        "Correctness", run_correctness, CorrectnessConfig, True, "actual_output", "expected_output"
    ),
    _n8n("Helpfulness", run_helpfulness, HelpfulnessConfig, True, "input", "actual_output"),
    _n8n(
        "String Similarity",
        run_string_similarity,
        StringSimilarityConfig,
        False,
        "actual_output",
        "expected_output",
    ),
    _n8n(
        "Categorization",
        run_categorization,
        CategorizationConfig,
        False,
        "actual_output",
        "expected_output",
    ),
    _n8n("Tools Used", run_tools_used, ToolsUsedConfig, False, "tools_called", "expected_tools"),
)
