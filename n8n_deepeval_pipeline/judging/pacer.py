"""One judge's pacer, shared by every worker of the machine through the judge state.

Before a call: wait for an in-flight slot within the concurrency fitted so far, then
while the judge is paused (a budget that must reset first), then for its turn in the
requests and tokens per minute (configured, or as the provider's headers said). After it: fit the
concurrency to the outcome (``pacing.Concurrency``), keep the budget the provider
reported, pause every call until a spent budget resets, and correct the call's token
estimate from the usage the answer reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

from n8n_deepeval_pipeline.judging.in_flight import InFlightLimit
from n8n_deepeval_pipeline.judging.pacing import OVERLOAD_STATUS, RateLimits
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from n8n_deepeval_pipeline.judging.spec import JudgeSpec

# Tokens a call is assumed to cost before its answer says: the prompt at ~4 characters a
# token (the provider's tokenizer needs files the machine may not have), plus the answer.
_CHARS_PER_TOKEN = 4
_ANSWER_TOKENS = 256


def estimate_tokens(prompt: str, max_tokens: int | None) -> int:
    """A call's tokens before it is made (corrected from the answer's usage after)."""
    return len(prompt) // _CHARS_PER_TOKEN + (max_tokens or _ANSWER_TOKENS)


class Pacer:
    """When a call of one judge may go, and what its outcome teaches."""

    def __init__(self, spec: JudgeSpec, state: SharedState, state_dir: Path) -> None:
        self.spec = spec
        self.state = state
        self.judge = spec.identity
        self._slots = InFlightLimit(state_dir / "in-flight" / spec.identity, spec.max_in_flight)
        self._allowed_now = (0.0, 1)  # read at, slots: re-read at most every 0.2 s

    def _allowed(self) -> int:
        read_at, slots = self._allowed_now
        if time.monotonic() - read_at > 0.2:
            slots = self.state.concurrency(self.judge, self.spec.max_in_flight).slots
            self._allowed_now = (time.monotonic(), slots)
        return slots

    @contextlib.asynccontextmanager
    async def call(self, tokens: int) -> AsyncIterator[list[int | None]]:
        """Hold the judge's budget for one call; the caller puts its real tokens in the list."""
        actual: list[int | None] = [None]
        async with self._slots.slot(self._allowed):
            # Paced once it holds a slot: a call that queued before the provider's limits
            # were known is paced by them too.
            while (paused := self.state.paused_for(self.judge)) > 0:
                await asyncio.sleep(paused)
            requests, token_limit = self._per_minute()
            if requests is not None:
                await self._book("requests", *requests, 1)
            if token_limit is not None:
                await self._book("tokens", *token_limit, tokens)
            yield actual
        if token_limit is not None and actual[0] is not None:
            self.state.repay_paced(self.judge, "tokens", token_limit[0], actual[0] - tokens)

    def _per_minute(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        """(per minute, burst) for requests and tokens: configured, else as the provider told.

        A configured limit allows a minute's worth at once, as a per-minute window does; a
        limit learned from the headers is kept evenly (providers enforce it over shorter
        periods than the minute, and their remaining budget is shared with other clients).
        """
        told = self.state.told_limits(self.judge)
        paced: list[tuple[float, float] | None] = []
        for configured, learned in zip(
            (self.spec.requests_per_minute, self.spec.tokens_per_minute), told, strict=True
        ):
            if configured:
                paced.append((float(configured), float(configured)))
            elif learned:
                paced.append((float(learned), 1.0))
            else:
                paced.append(None)
        return paced[0], paced[1]

    async def _book(self, budget: str, per_minute: float, burst: float, cost: int) -> None:
        while (wait := self.state.take_paced(self.judge, budget, per_minute, cost, burst)) > 0:
            await asyncio.sleep(wait)

    def answered(self, limits: RateLimits | None, next_tokens: int) -> None:
        """A call succeeded: grow the concurrency; pause if the budget it reports is spent."""
        self.state.record_outcome(self.judge, self.spec.max_in_flight, False, limits)
        if limits is not None and (pause := limits.pause_s(next_tokens)) > 0:
            self.state.pause(self.judge, pause)

    def refused(
        self, status: int | None, limits: RateLimits | None, retry_after_s: float | None
    ) -> None:
        """A call failed: an overload answer halves the concurrency and pauses as told."""
        if status not in OVERLOAD_STATUS:
            return
        self.state.record_outcome(self.judge, self.spec.max_in_flight, True, limits)
        if retry_after_s:
            self.state.pause(self.judge, retry_after_s)
