"""The optimiser's process: ``python -m n8n_deepeval_pipeline.optimization.process FD``.

Started by ``worker.launcher`` for ``optimization.launcher`` with the workers' environment
(no credential, DeepEval quiet) in a scratch working folder. It reads one
``OptimizationRequest`` (``ask``), imports DeepEval (without the Anthropic SDK, as the
workers do) and runs the search: every answer and score is asked of the calling process
(a ``call``: an ``AnswerCall`` or a ``ScoreCall``, each awaiting its ``reply``), every
round is reported (an ``update``), and it ends with ``done`` (the outcome) or ``failed``
(why, the model's key taken out). It exits when the calling process is gone.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from n8n_deepeval_pipeline.optimization.request import (
    AnswerCall,
    AnswerReply,
    OptimizationRequest,
    Round,
    ScoreCall,
    ScoreReply,
)
from n8n_deepeval_pipeline.optimization.spend import Spend
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.worker.child_channel import CallsToParent, Channel, connect, exit_now
from n8n_deepeval_pipeline.worker.zygote import without_anthropic_sdk


class _Caller:
    """The calling process, as the search sees it: calls out, their replies back in."""

    def __init__(self, channel: Channel, loop: asyncio.AbstractEventLoop) -> None:
        self._calls = CallsToParent(channel, loop)
        self._channel = channel

    async def _call(self, call: AnswerCall | ScoreCall) -> Any:
        return await self._calls.ask(lambda n: call.model_copy(update={"call_id": n}))

    async def answer(self, candidate: str, golden_id: str, spend: Spend) -> AnswerReply:
        call = AnswerCall(call_id=0, candidate=candidate, golden_id=golden_id, spend=spend)
        return AnswerReply.model_validate(await self._call(call))

    async def score(self, answer_id: str, objective: str, spend: Spend) -> ScoreReply:
        call = ScoreCall(call_id=0, answer_id=answer_id, objective=objective, spend=spend)
        return ScoreReply.model_validate(await self._call(call))

    def round(self, report: Round) -> None:
        self._channel.send("update", report)


async def _serve(request: OptimizationRequest, channel: Channel) -> None:
    started = time.perf_counter()
    with without_anthropic_sdk():
        from n8n_deepeval_pipeline.optimization.deepeval_search import DeepEvalSearch
    caller = _Caller(channel, asyncio.get_running_loop())
    channel.send("ready", time.perf_counter() - started)
    channel.send("done", await DeepEvalSearch(request, caller).run())


def main() -> None:
    """Serve one request; report the outcome or why it failed; exit without DeepEval's teardown."""
    channel = connect()
    asked = channel.receive()
    assert asked is not None
    request = asked.of(OptimizationRequest)
    code = 0
    try:
        asyncio.run(_serve(request, channel))
    except Exception as error:  # reported, not raised: the calling process names it
        message = redact(f"{type(error).__name__}: {error}", request.secrets)
        channel.send("failed", message.splitlines()[0][:500] if message else "failed")
        code = 1
    exit_now(code)


if __name__ == "__main__":
    main()
