"""One judge's pacer, shared by every worker of the machine through the judge state.

Before a call: wait while the judge is paused (a budget that must reset first), for a
slot in the requests-per-minute and tokens-per-minute windows when they are configured,
then for an in-flight slot within the concurrency fitted so far. After it: fit the
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
        await self._wait(tokens)
        row = await self._take_tokens(tokens)
        actual: list[int | None] = [None]
        async with self._slots.slot(self._allowed):
            yield actual
        if row is not None and actual[0] is not None:
            self.state.correct_tokens(row, actual[0])

    async def _wait(self, tokens: int) -> None:
        while (paused := self.state.paused_for(self.judge)) > 0:
            await asyncio.sleep(paused)
        limit = self.spec.requests_per_minute
        while limit is not None and (wait := self.state.take_rpm_slot(self.judge, limit)) > 0:
            await asyncio.sleep(wait)

    async def _take_tokens(self, tokens: int) -> int | None:
        limit = self.spec.tokens_per_minute
        if limit is None:
            return None
        while True:
            wait, row = self.state.take_tokens(self.judge, limit, tokens)
            if row is not None:
                return row
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
