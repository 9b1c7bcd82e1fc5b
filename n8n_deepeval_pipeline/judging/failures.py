"""How a judge fails, and the one name each failure has wherever it is reported.

A metric's score row, a simulated conversation and a synthesis all name a failed judge
the same way, by the exception the judge raised and, for a refusal, its HTTP status: a
refused key is ``judge_auth`` whether an evaluation or a simulated user met it, and a
judge that kept answering 429 until the call's time ran out is ``judge_rate_limited``.
No DeepEval here: the command's side reads these names too.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

JudgeFailureKind = Literal[
    "judge_auth",
    "judge_error",
    "judge_forbidden",
    "judge_invalid_output",
    "judge_rate_limited",
    "judge_unavailable",
]
# The judge refused the call, by its HTTP status: the key (401), or what the key may use
# (403: a model, a region); kept apart from other judge errors so that the summary names it.
REFUSED_KINDS: Mapping[int, JudgeFailureKind] = MappingProxyType(
    {401: "judge_auth", 403: "judge_forbidden"}
)


class JudgeCallError(RuntimeError):
    """The judge could not be reached or kept failing (retries exhausted).

    ``status``: the HTTP status of the last failed call, None when there was no answer.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class JudgeRateLimited(JudgeCallError):
    """The judge kept refusing for its rate limit until the call's time for retries ended."""


class JudgeUnavailable(RuntimeError):
    """The circuit breaker is open: calls fail fast instead of hammering a dead endpoint."""


class JudgeOutputError(RuntimeError):
    """The judge answered twice with JSON that does not fit the metric's schema."""


JUDGE_FAILURES = (JudgeCallError, JudgeUnavailable, JudgeOutputError)
"""Every failure of the judge itself (a bug in what called it is none of these)."""


def failure_kind(error: BaseException) -> JudgeFailureKind | None:
    """The name of a judge's failure; None when ``error`` is not the judge's."""
    if isinstance(error, JudgeOutputError):
        return "judge_invalid_output"
    if isinstance(error, JudgeUnavailable):
        return "judge_unavailable"
    if isinstance(error, JudgeRateLimited):
        return "judge_rate_limited"
    if isinstance(error, JudgeCallError):
        return REFUSED_KINDS.get(error.status or 0, "judge_error")
    return None
