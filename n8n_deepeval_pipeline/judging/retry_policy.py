"""When to try a judge call again, and how long to wait first."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pydantic import BaseModel, ConfigDict, Field

# Status codes worth another attempt: rate limits, timeouts and server errors.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class RetryPolicy(BaseModel):
    """Exponential backoff with full jitter, bounded in attempts and in total time."""

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
