"""People's labels as the examples DeepEval's optimiser scores a judge metric's text on.

The optimiser rewrites a prompt so that a model's answers score well on examples. Here:

- the **prompt** is the metric's text (``judge_text``: G-Eval's criteria or steps, a
  DAG's node texts);
- an **example** (DeepEval's golden) is one labelled training run: its ``input`` shows
  the run as the judge is shown it (the fields the metric reads), its
  ``expected_output`` what people said of it (``people say fail``);
- the **answer** of a text on an example is the judge's verdict on that run with the
  metric made from that text, scored in the worker pool as any score is
  (``pass (score 0.82): <the judge's reason>``);
- the **metric** DeepEval scores an answer with is agreement with people: 1 when the
  verdict is the people's, else 0, with a reason that says which way it erred (too
  lenient, too strict) and the judge's score. The mean DeepEval maximises over a set of
  examples is the share of them on which judge and people agree.

Raw agreement, not kappa, is what a per-example score can add up to; kappa (chance taken
out) is measured on the held-out runs and decides whether the rewrite is kept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.options import ItemField

OBJECTIVE_LABEL = "agreement"
# The class name DeepEval shows beside each agreement score in the feedback it writes.
OBJECTIVE_NAME = "AgreementWithPeople"
_FIELD_CHARACTERS = 2000  # of one field in an example: the optimiser reads many at once
_SOURCES = {"tools_called": "intermediate_steps"}


def _said(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _FIELD_CHARACTERS else text[:_FIELD_CHARACTERS] + " …"


def run_text(item: EvaluationItem, fields: Sequence[ItemField]) -> str:
    """The run as the metric's judge is shown it: each field it reads, titled."""
    parts = []
    for field in fields:
        value = getattr(item, _SOURCES.get(field, field), None)
        if value is not None:
            parts.append(f"{field.replace('_', ' ').title()}:\n{_said(value)}")
    return "\n\n".join(parts)


def verdict_word(passed: bool) -> str:
    """Pass or fail."""
    return "pass" if passed else "fail"


def people_text(verdicts: Sequence[bool]) -> str:
    """What people said of a run (the example's expected output): their majority verdict."""
    passed = sum(verdicts)
    majority = passed * 2 > len(verdicts)
    agreeing = passed if majority else len(verdicts) - passed
    said = f"people say {verdict_word(majority)}"
    return said if agreeing == len(verdicts) else f"{said} ({agreeing} of {len(verdicts)})"


class Verdict(BaseModel):
    """The judge's verdict on a run with one text of the metric (None: it gave none)."""

    model_config = ConfigDict(frozen=True)

    passed: bool | None
    score: float | None = None
    reason: str | None = None

    def text(self) -> str:
        """The verdict as the optimiser reads it (the answer of the text on the example)."""
        if self.passed is None:
            return f"no verdict: {self.reason or 'the metric gave none'}"
        score = "" if self.score is None else f" (score {self.score:.2f})"
        return f"{verdict_word(self.passed)}{score}: {self.reason or ''}".rstrip(": ")


class Agreement(BaseModel):
    """The agreement metric's score of one verdict: 1 if people said the same, else 0."""

    model_config = ConfigDict(frozen=True)

    score: float
    agrees: bool
    reason: str


def agreement(people: bool, verdict: Verdict) -> Agreement:
    """How a verdict compares with people's: agreeing, too lenient, too strict, or none."""
    said = verdict_word(people)
    if verdict.passed is None:
        return Agreement(score=0.0, agrees=False, reason=f"people say {said}; {verdict.text()}")
    score = "" if verdict.score is None else f" (score {verdict.score:.2f})"
    if verdict.passed == people:
        return Agreement(
            score=1.0, agrees=True, reason=f"agrees with people: both say {said}{score}"
        )
    erred = "too lenient" if verdict.passed else "too strict"
    return Agreement(
        score=0.0,
        agrees=False,
        reason=f"{erred}: people say {said}, the judge says {verdict_word(verdict.passed)}{score}",
    )
