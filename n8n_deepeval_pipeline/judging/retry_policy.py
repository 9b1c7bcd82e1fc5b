"""When to try a judge call again, and how long to wait first.

A rate-limit answer (429, 529, an overloaded 503) says "not now", not "no": it is retried
for as long as the evaluation has time (``RATE_LIMIT_SHARE`` of its timeout), however
many attempts that takes; only other failures are bounded by a count of attempts. A call
made outside an evaluation (the simulated user's, the synthesizer's) has the same time
(``call_limit_s``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline import environment_variables

# Status codes worth another attempt: rate limits, timeouts and server errors.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# "Too many requests" (429) and Anthropic's "overloaded" (529) are always rate limits; a
# 503 is one when it says so: with a Retry-After, or in words (Ollama: "server busy").
RATE_LIMIT_STATUS = frozenset({429, 529})
_OVERLOADED_WORDS = ("overload", "busy", "capacity", "rate limit", "too many")
# Rate-limit answers are retried until this share of the evaluation's timeout has passed:
# the rest is left for the last attempt's answer, before the pool's own timeout.
RATE_LIMIT_SHARE = 0.9
EVALUATION_TIMEOUT_ENV = "N8N_DEEPEVAL_EVAL_TIMEOUT_S"


def call_limit_s(evaluation_timeout_s: float) -> float:
    """How long a judge call made outside an evaluation may take.

    What an evaluation gives its judge, its rate-limit retries and its wait for a turn
    included.
    """
    return RATE_LIMIT_SHARE * evaluation_timeout_s


DEFAULT_CALL_LIMIT_S = call_limit_s(300.0)
"""``call_limit_s`` of the default evaluation timeout (``N8N_DEEPEVAL_EVAL_TIMEOUT_S``)."""


def configured_call_limit_s(environ: Mapping[str, str] = os.environ) -> float:
    """``call_limit_s`` of the evaluation timeout this environment sets."""
    setting = environment_variables.setting(EVALUATION_TIMEOUT_ENV, environ)
    try:
        return call_limit_s(float(setting))
    except ValueError:
        raise ValueError(f"{EVALUATION_TIMEOUT_ENV}={setting!r} is not a number") from None


def is_rate_limited(status: int | None, retry_after_s: float | None, message: str) -> bool:
    """Whether a failed call's answer means "too many calls now" (paced, retried in time)."""
    if status in RATE_LIMIT_STATUS:
        return True
    if status != 503:
        return False
    return retry_after_s is not None or any(word in message.lower() for word in _OVERLOADED_WORDS)


class RetryPolicy(BaseModel):
    """Exponential backoff with full jitter, bounded in attempts and in total time.

    The bounds are for failures other than rate limits; those are bounded by the
    evaluation's timeout (or, for a judge used outside an evaluation, ``max_total_s``).
    """

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=6, ge=1, le=20)
    base_delay_s: float = Field(default=0.5, gt=0)
    max_delay_s: float = Field(default=30.0, gt=0)
    max_total_s: float = Field(default=300.0, gt=0)

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (attempt counts from 1).

        A server's Retry-After wins (capped at max_delay_s); otherwise a random delay
        up to base × 2^(attempt-1), capped.
        """
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return rng.uniform(0, ceiling)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)
