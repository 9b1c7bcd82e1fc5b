"""n8n's built-in evaluation metrics, scored as n8n's Evaluation node scores them.

- string similarity: 1 − Levenshtein distance / length of the longer string (trimmed,
  case-sensitive; two empty strings are identical);
- categorization: 1 when the trimmed strings are equal, else 0;
- tools used: share of expected tools called at least once; names compare without case
  after n8n's node-name → tool-name rule (runs of other characters become ``_``);
- the correctness and helpfulness presets: an LLM judge answers 1–5, normalised as n8n
  normalises it (score / 5), or pass/fail for ``outputType: boolean``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field
from rapidfuzz.distance import Levenshtein

_TOOL_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


def string_similarity(expected: str, actual: str) -> float:
    """1 − edit distance / max length, on trimmed strings."""
    expected, actual = expected.strip(), actual.strip()
    longer = max(len(expected), len(actual))
    return 1.0 if longer == 0 else 1.0 - Levenshtein.distance(expected, actual) / longer


def categorization(expected: str, actual: str) -> float:
    """1.0 for an exact (trimmed, case-sensitive) match, else 0.0."""
    return 1.0 if expected.strip() == actual.strip() else 0.0


def tool_name(node_name: str) -> str:
    """The tool name n8n gives a tool node (``Get Events`` → ``Get_Events``), max 64 chars."""
    return _TOOL_NAME_UNSAFE.sub("_", node_name)[:64]


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
