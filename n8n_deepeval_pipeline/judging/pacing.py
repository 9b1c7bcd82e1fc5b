"""How fast a judge may be called: its headers, the rate it accepts, the calls in flight.

Providers tell their budget in headers, each in its own words: OpenAI and Azure
``x-ratelimit-remaining-requests`` / ``-tokens`` with resets as durations (``6m0s``,
``20ms``), Anthropic ``anthropic-ratelimit-requests-remaining`` / ``-tokens-remaining``
with resets as RFC 3339 times, and both the per-minute limits themselves. ``RateLimits``
reads both.

Many judges tell nothing (a gateway that answers 429 with at most a ``Retry-After``, a
self-hosted server with a request cap). For them ``FittedRate`` finds the request rate
the provider accepts from its answers, and ``Concurrency`` the calls kept in flight, as
TCP fits its window: both decrease multiplicatively on a rate-limit answer, once per
window (``WINDOW_S``), and grow additively after a clean window.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

# The pacing changes its mind at most once a window: a burst of refusals (the calls that
# were already on their way) is one signal, not one per answer. Providers refuse on
# arrival, so a second is enough to see what a change did, if it holds a few calls.
WINDOW_S = 1.0
_WINDOW_CALLS = 4  # a fitted rate's window holds at least this many of its calls
_BETA = 0.9  # after a decrease: this share of the rate the provider was seen to accept
_PROBE = 1.5  # growth per clean window while the rate is not measured
_STEP = 0.05  # additive increase per clean window: this share of the measured rate
_STALE_WINDOWS = 10  # clean windows in a row after which the measurement is probed again
_FLOOR_SHARE = 1 / 8  # of the best rate measured: the pace never goes below it
_SLOWEST_PER_S = 1 / 60  # nor below one request a minute
# Calls in flight a fitted rate keeps room for: the rate times the latency (what Little's
# law says it needs), twice over, so that the rate binds and not the calls in flight.
HEADROOM = 2.0
# A provider refuses a call over its rate on arrival, long before it would answer one: a
# probing judge's window that stayed full this long without a refusal had room to spare.
QUIET_S = 0.25
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
    step: float = 1.0  # slow start's growth per answer

    @classmethod
    def start(cls, ceiling: int) -> Concurrency:
        """A judge whose limits are known (told by its first answer, or configured).

        Half the ceiling at once: the requests are paced by those limits (and a 429 halves
        this); at a 2 s latency each doubling takes 2 s, so a judge started low leaves a
        short benchmark half idle.
        """
        return cls(limit=float(max(ceiling // 2, 1)), ceiling=max(ceiling, 1))

    @classmethod
    def probing(cls, first: int, ceiling: int) -> Concurrency:
        """A judge that told no limits: ``first`` calls, four times as many each round trip.

        Nothing but the calls in flight holds it back until it refuses one: half the
        ceiling at once sent 129 calls at a judge allowing 10 a second. Quadrupling reaches
        the ceiling of a judge without limits in a few round trips, and a limited one
        refuses at most one round trip's growth before its rate is fitted.
        """
        return cls(limit=float(min(max(first, 1), ceiling)), ceiling=max(ceiling, 1), step=3.0)

    @property
    def slots(self) -> int:
        """Whole calls allowed in flight now."""
        return max(int(self.limit), 1)

    def succeeded(self) -> Concurrency:
        """One call answered: +``step`` in slow start, +1 per window of answers after it."""
        slow_start = self.threshold is None or self.limit < self.threshold
        step = self.step if slow_start else 1.0 / self.limit
        return replace(self, limit=min(self.limit + step, float(self.ceiling)))

    @property
    def unrefused(self) -> bool:
        """Below its ceiling, and never halved by a refusal (slow start has no end yet)."""
        return self.threshold is None and self.limit < self.ceiling

    def widened(self) -> Concurrency:
        """A full window that no refusal answered within ``QUIET_S``: four times as many.

        What a round trip's answers grow a probing window by, without waiting for them: at
        a 2 s judge three round trips of probing (4, 16, 64, 256) left the judge idle for
        6 of a 12 s run, where a quarter second each tells as much.
        """
        return replace(self, limit=min(self.limit * 4, float(self.ceiling)))

    def overloaded(self, now: float) -> Concurrency:
        """A 429 or overload answer: halve, unless it was halved less than a window ago."""
        if now - self.decreased_at < WINDOW_S:
            return self
        halved = max(self.limit / 2, 1.0)
        return replace(self, limit=halved, threshold=halved, decreased_at=now)

    def with_room_for(self, per_s: float | None, latency_s: float | None) -> int:
        """Slots, with at least the room a fitted rate needs at this latency."""
        if not per_s or not latency_s:
            return self.slots
        needed = math.ceil(HEADROOM * per_s * latency_s)
        return min(max(self.slots, needed), self.ceiling)


@dataclass(frozen=True)
class FittedRate:
    """The request rate a judge that tells no budget accepts, fitted from its answers.

    Unknown until the judge first refuses a call (a 429, 529, an overloaded 503). A
    provider's budget is a bucket refilled at its rate: when it refuses, the bucket is
    empty. From then on (``since``) every call sent and not refused is counted
    (``admitted``); at the next refusal, at least a window later, the bucket is empty
    again, so what it admitted in between is what it refilled: the rate. That is a lower
    bound when the bucket overflowed meanwhile (calls paced below the rate leave its
    refill unused), so the fastest pace of a clean window since (``clean_per_s``) counts
    too. The pace drops to ``_BETA`` of the larger (``measured``), so the bucket refills a
    little, and grows by ``_STEP`` of it after each clean window in which calls waited
    for it (``held``): additive increase, multiplicative decrease. Nothing admitted at
    all (an overload, an outage) halves the pace, down to an eighth of the best rate
    measured; it then grows by half each clean window, as it does at the first refusal
    (when it starts from what the halved calls in flight send) and after
    ``_STALE_WINDOWS`` clean windows in a row (the judge has more room than measured).
    """

    per_s: float | None = None  # requests a second; None: never refused, not paced
    since: float | None = None  # the last decrease: the provider's bucket was empty then
    admitted: int = 0  # calls sent since then and not refused
    measured: float | None = None  # requests a second the provider accepts; None: probe
    best: float = 0.0  # the highest rate measured
    clean_per_s: float = 0.0  # the fastest pace of a clean window since the last decrease
    clean_windows: int = 0  # clean windows in a row since the last decrease
    window_at: float = 0.0
    held: bool = False  # a call waited for this pace in the current window
    refused: bool = False  # a call was refused in the current window
    decreased_at: float | None = None

    @property
    def fitting(self) -> bool:
        """Whether the judge has refused a call: its sends are counted and paced."""
        return self.since is not None

    @property
    def window_s(self) -> float:
        """The window of this pace: a second, or long enough for ``_WINDOW_CALLS`` calls."""
        return max(WINDOW_S, _WINDOW_CALLS / self.per_s) if self.per_s else WINDOW_S

    def rolled(self, now: float) -> FittedRate:
        """The pace once the current window is over: grown if it was clean and binding."""
        if self.since is None or now < self.window_at + self.window_s:
            return self
        fit = replace(self, window_at=now, held=False, refused=False)
        if self.refused or not self.held or self.per_s is None:
            return fit  # refused, or the pace did not bind: no sign it could be higher
        clean = replace(
            fit, clean_per_s=max(self.clean_per_s, self.per_s), clean_windows=self.clean_windows + 1
        )
        measured = None if clean.clean_windows >= _STALE_WINDOWS else self.measured
        grown = self.per_s * _PROBE if measured is None else self.per_s + _STEP * measured
        return replace(clean, per_s=grown, measured=measured)

    def sent(self, now: float, held: bool) -> FittedRate:
        """A call went (``held``: after waiting for this pace)."""
        fit = self.rolled(now)
        if fit.since is None:
            return fit
        return replace(fit, admitted=fit.admitted + 1, held=fit.held or held)

    def refusal(self, now: float, sent_at: float, first_per_s: float) -> FittedRate:
        """A call sent at ``sent_at`` was refused: decrease, once a window.

        ``first_per_s``: the pace to start from at the first refusal.
        """
        fit = self.rolled(now)
        counted = fit.since is not None and sent_at >= fit.since
        fit = replace(fit, admitted=fit.admitted - counted, refused=True)
        if fit.decreased_at is not None and now - fit.decreased_at < fit.window_s:
            return fit
        decreased = replace(fit, since=now, admitted=0, clean_per_s=0.0, clean_windows=0)
        decreased = replace(decreased, decreased_at=now, window_at=now, held=False)
        if fit.since is None or fit.per_s is None:
            return replace(decreased, per_s=max(first_per_s, _SLOWEST_PER_S))
        floor = max(fit.best * _FLOOR_SHARE, _SLOWEST_PER_S)
        if fit.admitted <= 0:  # nothing let in: no measure of the rate, only of an outage
            return replace(decreased, per_s=max(fit.per_s / 2, floor), measured=None)
        rate = max(fit.admitted / (now - fit.since), fit.clean_per_s)
        return replace(
            decreased,
            per_s=max(_BETA * rate, floor),
            measured=rate,
            best=max(fit.best, rate),
        )
