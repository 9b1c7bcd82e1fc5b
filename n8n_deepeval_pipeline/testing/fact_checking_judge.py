"""FactCheckingJudge: a loopback judge (a test double) that follows G-Eval criteria when told to.

It answers every request as ``PromptEngineer`` does (so, as ``LoopbackJudge``: from a hash of
the request, reading nothing), except a G-Eval whose criteria or steps, or a DAG's binary
judgement whose criteria, say ``INSTRUCTION``:

- asked for evaluation steps from criteria that say it, it gives the criteria's own lines
  as the steps, so the instruction reaches the scoring prompt, as a real model's steps
  carry its criteria;
- asked for a score with steps that say it, it fails an answer that leaves out a fact of
  the expected output (a token with a digit, or half its other words of four letters or
  more, missing from the answer) with 0, and passes any other with 10, in whichever form
  G-Eval asks (its log-probabilities call, or a schema); asked for a binary judgement
  whose criteria say it, it answers false for such an answer and true for any other;

and, as ``PromptEngineer``, its diagnosis of failing agreement names ``LACKING``, and its
rewrite adds ``INSTRUCTION`` to the criteria. A judge metric aligned with people who fail
answers missing a fact thus has something to find: with the instruction, this judge
agrees with them; without it, its verdicts are as random as the loopback judge's.

Run as a process, for the guide's figures:

    python -m n8n_deepeval_pipeline.testing.fact_checking_judge --port 8765
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

from n8n_deepeval_pipeline.judging.logprob_answers import rubric_answer
from n8n_deepeval_pipeline.testing.loopback_judge import (
    prompt_text,
    request_seed,
    serve_until_stopped,
)
from n8n_deepeval_pipeline.testing.prompt_engineer import PromptEngineer

INSTRUCTION = "An answer that leaves out a fact of the expected output fails."
LACKING = "the judge passes answers that leave out a fact of the expected output"
_CRITERIA = re.compile(r"Evaluation Criteria:\n(.*?)\n\n\*\*", re.S)
# A test case in a judge's prompt: each field's title, a colon and its value, then " \n\n"
# (G-Eval), or a newline before the next field's title or a blank line (a DAG's node).
_TITLES = "Input|Actual Output|Expected Output|Context|Retrieval Context|Tools Called"
_FIELD = r"(?:^|\n){}:\n(.*?)(?: ?\n\n|\n(?=(?:" + _TITLES + r"):\n)|$)"
_WORD = re.compile(r"[a-z0-9][a-z0-9.]*[a-z0-9]|[a-z0-9]")
_LONG_WORD = 4


def _field(prompt: str, title: str) -> str:
    found = re.search(_FIELD.format(re.escape(title)), prompt, re.S)
    return found[1].strip() if found else ""


def states_every_fact(answer: str, expected: str) -> bool:
    """Whether ``answer`` keeps every number and half the other words of ``expected``."""
    said = set(_WORD.findall(answer.lower()))
    wanted = _WORD.findall(expected.lower())
    numbers = [word for word in wanted if any(c.isdigit() for c in word)]
    words = [w for w in wanted if w not in numbers and len(w) >= _LONG_WORD]
    if any(number not in said for number in numbers):
        return False
    return not words or 2 * sum(word in said for word in words) >= len(words)


class FactCheckingJudge(PromptEngineer):
    """A loopback judge whose G-Eval fails answers missing a fact once its criteria say so."""

    def __init__(
        self, rule: Callable[[str, str], bool] = states_every_fact, **options: Any
    ) -> None:
        super().__init__(INSTRUCTION, LACKING, **options)
        self.rule = rule  # (answer, expected output) → pass?

    def _verdict(self, prompt: str) -> tuple[int, str]:
        answer = _field(prompt, "Actual Output")
        passed = self.rule(answer, _field(prompt, "Expected Output"))
        reason = "states every fact of the expected output" if passed else (
            "leaves out a fact of the expected output"
        )  # fmt: skip
        return (10 if passed else 0), reason

    def _reply(self, request: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        prompt = prompt_text(request.get("messages", []))
        raw = request.get("logprobs") and not request.get("response_format")
        if raw and INSTRUCTION in prompt:
            score, reason = self._verdict(prompt)
            top = int(request.get("top_logprobs") or 0)
            return rubric_answer(request_seed(request), reason, top, score)
        return super()._reply(request)

    def _structured(self, request: dict[str, Any], schema: Any, prompt: str) -> str:
        properties = (schema or {}).get("properties", {})
        criteria = _CRITERIA.search(prompt)
        if INSTRUCTION in prompt and "steps" in properties and criteria:
            return json.dumps({"steps": [line for line in criteria[1].splitlines() if line]})
        if INSTRUCTION in prompt and "score" in properties and "Test Case:" in prompt:
            score, reason = self._verdict(prompt)
            return json.dumps({"reason": reason, "score": score})
        if INSTRUCTION in prompt and properties.get("verdict", {}).get("type") == "boolean":
            score, reason = self._verdict(prompt)  # a DAG's binary judgement
            return json.dumps({"reason": reason, "verdict": score > 0})
        return super()._structured(request, schema, prompt)


def main() -> None:
    """Serve until SIGTERM or SIGINT, then print what it served (JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    options = parser.parse_args()
    judge = FactCheckingJudge(latency_s=options.latency_ms / 1000, port=options.port)
    serve_until_stopped(judge.start())


if __name__ == "__main__":
    main()
