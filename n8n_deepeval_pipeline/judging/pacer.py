"""One judge's pacer, shared by every worker of the machine through the judge state.

Before a call: wait for an in-flight slot within the concurrency fitted so far, then
while the judge is paused (a budget that must reset first), then for its turn in the
requests and tokens per minute: configured, as the provider's headers said, or, for a
judge that says nothing, the request rate fitted to its refusals (``pacing.FittedRate``).
A retry takes its turn like any first attempt. After a call: fit the concurrency (and
the rate, on a rate-limit answer) to the outcome, keep the budget the provider reported,
pause every call until a spent budget has room for the next, and correct the token
estimates from the usage the answer reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

from n8n_deepeval_pipeline.judging.in_flight import InFlightLimit
from n8n_deepeval_pipeline.judging.pacing import Concurrency, RateLimits
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from n8n_deepeval_pipeline.judging.spec import JudgeSpec

# Tokens a call is assumed to cost before its answer says: the prompt at ~4 characters a
# token (tiktoken, OpenAI's tokenizer, downloads its encodings on first use, which a
# machine without the internet cannot), plus the answer.
_CHARS_PER_TOKEN = 4
_ANSWER_TOKENS = 256
_FIRST_WINDOW = 4
_FULL_LOOK_S = 0.05  # while its calls fill the window, how often a process asks it to widen
_LATENCY_WEIGHT = 0.1  # of each answer in the moving average of answer times


class NoTurnInTime(Exception):
    """A call still waited for its turn when its evaluation's time for the judge ran out."""


class PacedCall:
    """One call the pacer let go: when, and the tokens its answer reported (None: unknown)."""

    def __init__(self) -> None:
        self.sent_at = time.time()
        self.tokens: int | None = None


class HeldBack:
    """One call while pacing holds it back; ``calls``: how many of this process are.

    Counted over all judges. The worker pool reads it to tell a judge that binds (calls
    wait their turn: more evaluations in flight would only wait too) from one with room.
    """

    calls = 0

    def __init__(self) -> None:
        self._held = False

    def __enter__(self) -> HeldBack:
        HeldBack.calls += 1
        self._held = True
        return self

    def let_go(self) -> None:
        """The call may go now."""
        if self._held:
            HeldBack.calls -= 1
            self._held = False

    def __exit__(self, *exc_info: object) -> None:
        self.let_go()


def estimate_tokens(prompt: str, max_tokens: int | None) -> int:
    """A call's tokens before it is made (corrected from the answer's usage after)."""
    return len(prompt) // _CHARS_PER_TOKEN + (max_tokens or _ANSWER_TOKENS)


class TokenEstimates:
    """Estimates corrected by what answers' usage said: their mean error is added.

    The estimate counts the whole answer budget (``max_tokens``, or 256) where judges
    answer in a few dozen tokens: booked uncorrected, every call in flight holds budget
    it will not use until its answer comes back.
    """

    def __init__(self) -> None:
        self.error = 0.0  # mean of usage minus estimate, over recent answers
        self.answers = 0

    def corrected(self, estimate: int) -> int:
        """The tokens a call estimated at ``estimate`` is expected to cost."""
        return max(round(estimate + self.error), 1)

    def learn(self, estimate: int, used: int) -> None:
        """Learn from one answer's usage.

        The mean error of all answers so far; from the tenth on a moving average weighted
        to the last ten or so, which follows a change of prompts.
        """
        self.answers += 1
        self.error += ((used - estimate) - self.error) / min(self.answers, 10)


class Pacer:
    """When a call of one judge may go, and what its outcome teaches."""

    def __init__(self, spec: JudgeSpec, state: SharedState, state_dir: Path) -> None:
        self.spec = spec
        self.state = state
        self.judge = spec.identity
        self._slots = InFlightLimit(state_dir / "in-flight" / spec.identity, spec.max_in_flight)
        self._allowed_now = (0.0, 1)  # read at, slots: re-read at most every 0.2 s
        self.estimates = TokenEstimates()
        self._credit = 0  # tokens this process booked and its calls did not use
        self.latency_s: float | None = None  # a moving average of this process's answer times

    def _allowed(self) -> int:
        read_at, slots = self._allowed_now
        since = time.monotonic() - read_at
        full = self._slots.waiting > 0
        if since > 0.2 or (full and since > _FULL_LOOK_S):
            fitted = self._fitted_now(full)
            rate = self.state.fitted_rate(self.judge)
            slots = fitted.with_room_for(rate.per_s, self.latency_s)
            self._allowed_now = (time.monotonic(), slots)
        return slots

    def _fitted_now(self, full: bool) -> Concurrency:
        """The judge's concurrency; ``full``: calls of this process wait for it (it may widen)."""
        ceiling = self.spec.max_in_flight
        if full and not (self.spec.requests_per_minute or self.spec.tokens_per_minute):
            return self.state.widen_when_quiet(self.judge, ceiling, self._start(None))
        return self.state.concurrency(self.judge, ceiling, self._first())

    def _first(self) -> int:
        """Calls in flight before the judge's first answer.

        Configured limits pace the calls from the first one: half the ceiling at once, as
        after an answer. Unknown limits: a few calls, until the first answer's headers
        tell them (a window of 4, as TCP starts with; fewer than any paid tier allows
        in a second, so no burst of 429s, and at a 2 s latency the judge is not idle
        for the first answer's whole wait).
        """
        if self.spec.requests_per_minute or self.spec.tokens_per_minute:
            return Concurrency.start(self.spec.max_in_flight).slots
        return _FIRST_WINDOW

    def _start(self, limits: RateLimits | None) -> Concurrency:
        """How a judge starts once it answers: fast if its limits are known, else probing."""
        known = self.spec.requests_per_minute or self.spec.tokens_per_minute
        told = (limits is not None and limits.told) or any(self.state.told_limits(self.judge))
        if known or told:
            return Concurrency.start(self.spec.max_in_flight)
        return Concurrency.probing(_FIRST_WINDOW, self.spec.max_in_flight)

    @contextlib.asynccontextmanager
    async def call(self, tokens: int, deadline: float | None = None) -> AsyncIterator[PacedCall]:
        """Hold the judge's budget for one call; the caller puts its real tokens in the call.

        ``deadline`` (``time.monotonic()``): a call still waiting for its turn then raises
        ``NoTurnInTime`` (its evaluation would only run into the pool's timeout).
        """
        with HeldBack() as held:
            try:
                async with asyncio.timeout_at(deadline) as waiting:
                    async with self._slots.slot(self._allowed):
                        # Paced once it holds a slot: a call that queued before the
                        # provider's limits were known is paced by them too.
                        while (paused := self.state.paused_for(self.judge)) > 0:
                            await asyncio.sleep(paused)
                        requests, token_limit = self._per_minute()
                        await self._book_request(requests)
                        expected = self.estimates.corrected(tokens)
                        if token_limit is not None:
                            from_credit = min(self._credit, expected)
                            self._credit -= from_credit
                            if expected > from_credit:
                                await self._book("tokens", *token_limit, expected - from_credit)
                        held.let_go()
                        waiting.reschedule(None)  # the call itself has the provider's timeout
                        paced = PacedCall()
                        yield paced
            except TimeoutError:
                if not waiting.expired():
                    raise
                raise NoTurnInTime(self._pace_words()) from None
        if paced.tokens is not None:
            self.estimates.learn(tokens, paced.tokens)
            self._settle(token_limit, expected, paced.tokens)

    def _settle(self, token_limit: tuple[float, float] | None, booked: int, used: int) -> None:
        """Book what a call used beyond its booking; keep what it did not use for the next.

        Given back to the shared booking, unused tokens are lost whenever the booking has
        fallen behind the present (nothing is booked ahead of an even pace); this
        process's next call books that much less instead.
        """
        if token_limit is None:
            return
        if used > booked:
            self.state.repay_paced(self.judge, "tokens", token_limit[0], used - booked)
        else:
            self._credit += booked - used

    def _per_minute(self) -> tuple[float | None, tuple[float, float] | None]:
        """Requests per minute, and (per minute, burst) for tokens: configured or told.

        The lower of the two, kept evenly, with no burst: a configured limit allowed a
        minute's worth at once, and a provider enforcing it over a second (as providers
        do) refused half the calls. Requests are also paced by the rate fitted to the
        judge's refusals (``SharedState.book_request``).
        """
        told = self.state.told_limits(self.judge)
        configured = (self.spec.requests_per_minute, self.spec.tokens_per_minute)
        requests, tokens = (
            min((float(limit) for limit in pair if limit), default=None)
            for pair in zip(configured, told, strict=True)
        )
        return requests, (tokens, 1.0) if tokens else None

    def _pace_words(self) -> str:
        """The pace that kept a call waiting, for a message."""
        requests, _ = self._per_minute()
        fitted = self.state.fitted_rate(self.judge).per_s
        paces = [pace for pace in (requests, fitted * 60 if fitted else None) if pace]
        pace = f"{min(paces):.0f} requests a minute" if paces else "its calls in flight"
        return f"no turn for a judge call before the evaluation's deadline (paced at {pace})"

    async def _book_request(self, per_minute: float | None) -> None:
        held = False
        while (wait := self.state.book_request(self.judge, per_minute, held)) > 0:
            held = True
            await asyncio.sleep(wait)

    async def _book(self, budget: str, per_minute: float, burst: float, cost: int) -> None:
        while (wait := self.state.take_paced(self.judge, budget, per_minute, cost, burst)) > 0:
            await asyncio.sleep(wait)

    def answered(
        self, limits: RateLimits | None, next_tokens: int, call: PacedCall | None = None
    ) -> None:
        """A call succeeded: grow the concurrency; pause if the budget it reports is spent."""
        if call is not None:
            took = time.time() - call.sent_at
            average = self.latency_s
            self.latency_s = (
                took if average is None else average + _LATENCY_WEIGHT * (took - average)
            )
        start = self._start(limits)
        self.state.record_outcome(self.judge, self.spec.max_in_flight, False, limits, start=start)
        needed = self.estimates.corrected(next_tokens)
        if limits is not None and (pause := limits.pause_s(needed)) > 0:
            self.state.pause(self.judge, pause)

    def refused(
        self, limits: RateLimits | None, retry_after_s: float | None, call: PacedCall | None = None
    ) -> None:
        """A call was refused for its rate: decrease the pace, pause as told (Retry-After)."""
        self.state.record_outcome(
            self.judge,
            self.spec.max_in_flight,
            True,
            limits,
            start=self._start(limits),
            sent_at=call.sent_at if call is not None else None,
            latency_s=self.latency_s,
        )
        self._allowed_now = (0.0, 1)  # read the decreased concurrency at the next call
        if retry_after_s:
            self.state.pause(self.judge, retry_after_s)
