"""A judge's pacing against a simulated rate-limited provider, on a simulated clock.

The pacing's own state (``SharedState``: the booking of requests, the fitted rate, the
calls in flight) is driven as the pacer and the judge drive it, with the state's clock
replaced by the simulation's: calls wait for a slot, for a pause and for their booking,
go to a provider that refills a bucket continuously (``RateBucket``, the loopback judge's)
and refuses on arrival, are answered after a fixed latency (a full window widens when no
refusal came for a quiet while, as the pacer's does), and a refused call is retried
after a backoff with full jitter (or its Retry-After) from the same booking. Nothing
sleeps: a minute of pacing takes a fraction of a second, the same every run.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from n8n_deepeval_pipeline.judging.pacing import QUIET_S, Concurrency, FittedRate
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from n8n_deepeval_pipeline.testing.loopback_judge import RateBucket

JUDGE = "simulated"
CEILING = 256
REFUSAL_S = 0.002  # a provider refuses on arrival: the 429 comes back at once


@dataclass
class Outcome:
    """What the provider saw: each request's time and whether it was let in."""

    requests: list[tuple[float, bool]] = field(default_factory=list)
    fitted: list[tuple[float, FittedRate]] = field(default_factory=list)  # at each refusal
    answered: int = 0

    def refused_between(self, start: float, end: float) -> tuple[int, int]:
        """Requests refused, and all requests, that arrived in [start, end)."""
        window = [admitted for at, admitted in self.requests if start <= at < end]
        return sum(not admitted for admitted in window), len(window)

    def admitted_between(self, start: float, end: float) -> int:
        """Requests let in that arrived in [start, end)."""
        return sum(admitted for at, admitted in self.requests if start <= at < end)


@dataclass
class _Call:
    attempt: int = 1
    waited: bool = False


def simulate(
    folder: Path,
    *,
    per_minute: float,
    burst_s: float = 1.0,
    latency_s: float = 0.3,
    seconds: float = 120.0,
    waiting: int = 240,
    retry_after: bool = False,
    outage: tuple[float, float] | None = None,
    seed: int = 7,
) -> Outcome:
    """``waiting`` calls always ready (more demand than the provider allows) for ``seconds``.

    ``outage``: from when to when the provider refuses every call (an overload episode).
    ``retry_after``: its 429s say when the next call would fit.
    """
    now = [0.0]
    state = SharedState(folder / "judge.sqlite", clock=lambda: now[0])
    bucket = RateBucket(int(per_minute), None, burst_s, now=0.0)
    start = Concurrency.probing(4, CEILING)
    rng = random.Random(seed)
    policy = RetryPolicy()
    events: list[tuple[float, int, Callable[[], None]]] = []
    order = itertools.count()
    ready: list[tuple[float, int, _Call]] = [(0.0, next(order), _Call()) for _ in range(waiting)]
    outcome = Outcome()
    in_flight = [0]
    latency = [None]  # the pacer's moving average of answer times
    wake_at = [float("inf")]

    def at(when: float, action: Callable[[], None]) -> None:
        heapq.heappush(events, (when, next(order), action))

    def wake(when: float) -> None:
        if when < wake_at[0]:
            wake_at[0] = when
            at(when, dispatch)

    def dispatch() -> None:
        if now[0] >= wake_at[0]:
            wake_at[0] = float("inf")
        while ready and ready[0][0] <= now[0]:
            rate = state.fitted_rate(JUDGE)
            concurrency = state.concurrency(JUDGE, CEILING, 4)
            if in_flight[0] >= concurrency.with_room_for(rate.per_s, latency[0]):
                # The window is full: it widens after a quiet while (look again then), or
                # an answer frees a slot and dispatches again.
                widened = state.widen_when_quiet(JUDGE, CEILING, start)
                if in_flight[0] >= widened.with_room_for(rate.per_s, latency[0]):
                    if widened.unrefused:
                        wake(now[0] + QUIET_S)
                    return
            if (paused := state.paused_for(JUDGE)) > 0:
                return wake(now[0] + paused)
            call = ready[0][2]
            if (wait := state.book_request(JUDGE, None, call.waited)) > 0:
                call.waited = True
                return wake(now[0] + wait)
            heapq.heappop(ready)
            send(call)
        if ready:
            wake(ready[0][0])

    def send(call: _Call) -> None:
        sent_at = now[0]
        in_flight[0] += 1
        down = outage is not None and outage[0] <= sent_at < outage[1]
        admitted, headers = (False, {"retry-after": "1"}) if down else bucket.take(1, sent_at)
        outcome.requests.append((sent_at, admitted))
        if admitted:
            at(sent_at + latency_s, answered)
        else:
            told = float(headers["retry-after"]) if retry_after else None
            at(sent_at + REFUSAL_S, lambda: refused(call, sent_at, told))

    def answered() -> None:
        in_flight[0] -= 1
        outcome.answered += 1
        latency[0] = (
            latency_s if latency[0] is None else latency[0] + 0.1 * (latency_s - latency[0])
        )
        state.record_outcome(JUDGE, CEILING, False, start=start)
        heapq.heappush(ready, (now[0], next(order), _Call()))  # the evaluation's next call
        dispatch()

    def refused(call: _Call, sent_at: float, retry_after_s: float | None) -> None:
        in_flight[0] -= 1
        state.record_outcome(
            JUDGE, CEILING, True, start=start, sent_at=sent_at, latency_s=latency[0]
        )
        outcome.fitted.append((now[0], state.fitted_rate(JUDGE)))
        if retry_after_s:
            state.pause(JUDGE, retry_after_s)
        delay = policy.delay(call.attempt, retry_after_s, rng)
        heapq.heappush(ready, (now[0] + delay, next(order), _Call(call.attempt + 1)))
        wake(now[0] + delay)

    at(0.0, dispatch)
    while events and events[0][0] < seconds:
        now[0], _, action = heapq.heappop(events)
        action()
    return outcome
