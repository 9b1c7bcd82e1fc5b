"""How fast a judge may be called: its rate-limit headers, and the calls to keep in flight.

Providers tell their budget in headers, each in its own words: OpenAI and Azure
``x-ratelimit-remaining-requests`` / ``-tokens`` with resets as durations (``6m0s``,
``20ms``), Anthropic ``anthropic-ratelimit-requests-remaining`` / ``-tokens-remaining``
with resets as RFC 3339 times, and both the per-minute limits themselves. ``RateLimits``
reads both. ``Concurrency`` is the number of calls kept in flight, fitted to the provider
as TCP fits its window: from half its ceiling, it doubles while calls succeed (slow
start), grows by one per window of successes after the first overload, and halves on a
429 or an overload answer (at most once per second, so one burst of refusals halves it
once).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

# Answers that mean "too much, slow down": rate limited, overloaded, unavailable.
OVERLOAD_STATUS = frozenset({429, 503, 529})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# Header names per budget, OpenAI/Azure first, then Anthropic.
_REMAINING = {
    "requests": ("x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining"),
    "tokens": ("x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"),
}
_LIMIT = {
    "requests": ("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"),
    "tokens": ("x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"),
}
_RESET = {
    "requests": ("x-ratelimit-reset-requests", "anthropic-ratelimit-requests-reset"),
    "tokens": ("x-ratelimit-reset-tokens", "anthropic-ratelimit-tokens-reset"),
}


def _seconds(value: str, now: datetime) -> float | None:
    """A reset as seconds from now: ``1.5``, ``6m0s``, ``20ms`` or an RFC 3339 time."""
    text = value.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if parts and "".join(f"{n}{u}" for n, u in parts) == text:
        return sum(float(number) * _UNIT_S[unit] for number, unit in parts)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max((when - now).total_seconds(), 0.0)


def _first(headers: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((headers[name] for name in names if name in headers), None)


@dataclass(frozen=True)
class RateLimits:
    """A provider's remaining budget and when each part of it resets (None: not told)."""

    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None
    limit_requests: int | None = None  # per minute
    limit_tokens: int | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], now: datetime | None = None) -> RateLimits:
        """What the headers of one answer say (header names in lower case)."""
        moment = now or datetime.now(UTC)

        def count(names: dict[str, tuple[str, str]], budget: str) -> int | None:
            value = _number(_first(headers, names[budget]))
            return int(value) if value is not None else None

        def reset(budget: str) -> float | None:
            value = _first(headers, _RESET[budget])
            return _seconds(value, moment) if value else None

        return cls(
            count(_REMAINING, "requests"),
            count(_REMAINING, "tokens"),
            reset("requests"),
            reset("tokens"),
            count(_LIMIT, "requests"),
            count(_LIMIT, "tokens"),
        )

    @property
    def told(self) -> bool:
        """Whether the provider said anything about its budget."""
        return self.remaining_requests is not None or self.remaining_tokens is not None

    def pause_s(self, tokens_needed: int) -> float:
        """How long to hold calls: until a budget that cannot take one more call has room.

        With its per-minute limit told, a budget refills continuously, as OpenAI's does:
        the wait is for the missing part at that rate, never longer than the reset (the
        time until the whole budget is back). Holding every call until the reset stalled
        a judge kept near its limit at each answer that found the budget a call short.
        """
        return max(
            _wait_s(self.remaining_requests, 1, self.reset_requests_s, self.limit_requests),
            _wait_s(self.remaining_tokens, tokens_needed, self.reset_tokens_s, self.limit_tokens),
        )


def _wait_s(
    remaining: int | None, needed: int, reset_s: float | None, per_minute: int | None
) -> float:
    """Seconds until a budget with ``remaining`` left has ``needed`` (0: it has)."""
    if remaining is None or remaining >= needed:
        return 0.0
    if per_minute:
        refill_s = (needed - remaining) * 60 / per_minute
        return min(refill_s, reset_s) if reset_s else refill_s
    return reset_s or 1.0


def _number(text: str | None) -> float | None:
    try:
        return float(text or "")
    except ValueError:
        return None


@dataclass(frozen=True)
class Concurrency:
    """Calls a judge may have in flight: additive increase, multiplicative decrease."""

    limit: float
    ceiling: int
    threshold: float | None = None  # set at the first overload: slow start ends there
    decreased_at: float = 0.0

    @classmethod
    def start(cls, ceiling: int) -> Concurrency:
        """A judge past its first answer: half the ceiling at once.

        Its first answer's headers already pace the requests of a provider that sends
        them (and a 429 halves this); at a 2 s latency each doubling takes 2 s, so a
        judge started low leaves a short benchmark half idle.
        """
        return cls(limit=float(max(ceiling // 2, 1)), ceiling=max(ceiling, 1))

    @property
    def slots(self) -> int:
        """Whole calls allowed in flight now."""
        return max(int(self.limit), 1)

    def succeeded(self) -> Concurrency:
        """One call answered: +1 in slow start, +1 per window of answers after it."""
        slow_start = self.threshold is None or self.limit < self.threshold
        step = 1.0 if slow_start else 1.0 / self.limit
        return replace(self, limit=min(self.limit + step, float(self.ceiling)))

    def overloaded(self, now: float) -> Concurrency:
        """A 429 or overload answer: halve, unless it was halved less than a second ago."""
        if now - self.decreased_at < 1.0:
            return self
        halved = max(self.limit / 2, 1.0)
        return replace(self, limit=halved, threshold=halved, decreased_at=now)
