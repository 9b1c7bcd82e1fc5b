"""Each judge call of an evaluation, kept for its trace: model, tokens, when, how long.

The score row sums an evaluation's calls (``judge_calls``, tokens, cost, latency) and the
call ledger keeps each answered call's tokens for the spend of a killed attempt; neither
says when a call started or how long it took. A trace shows each call as a span, so an
evaluation keeps this log too, but only when a trace is exported
(``UsageCounter(keep_calls=True)``): otherwise nothing is kept and nothing is timed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class JudgeCall(BaseModel):
    """One judge call: answered (with its retries), served by the cache, or failed."""

    model_config = ConfigDict(frozen=True)

    judge: str
    """``provider:model``, as the score row names the judge."""
    provider: str
    model: str
    started_at: float
    """When the call started (seconds since the epoch)."""
    duration_s: float
    """Until it was answered or given up, its retries included."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    """Attempts refused before the answer (429, 5xx, timeouts)."""
    cached: bool = False
    """Answered by the judge cache: no call was made, no token spent."""
    error: str | None = None
    """Why the call failed (redacted where the evaluation's error is)."""
