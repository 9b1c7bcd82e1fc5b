"""The optimiser's process: ``python -m n8n_deepeval_pipeline.optimization.process FD``.

Started by ``optimization.launcher`` with the workers' environment (no credential, DeepEval
quiet) in a scratch working folder. It reads one ``OptimizationRequest`` from its
connection, imports DeepEval (without the Anthropic SDK, as the workers do) and runs the
search: every answer and score is asked of the calling process (``answer`` / ``score``,
each awaiting its ``reply``), every round is reported (``round``), and it ends with
``done`` (the outcome) or ``failed`` (why, the model's key taken out). It exits when the
calling process is gone.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from multiprocessing.connection import Connection
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
from n8n_deepeval_pipeline.worker.zygote import exit_with_parent, without_anthropic_sdk


class _Channel:
    """The connection to the calling process: calls out, their replies back in."""

    def __init__(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._connection = connection
        self._loop = loop
        self._send_lock = threading.Lock()
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_call = 0
        threading.Thread(target=self._read, name="replies", daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self._connection.send(message)

    async def _call(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        self._next_call += 1  # only the event loop's thread counts
        call_id = self._next_call
        answered: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._waiting[call_id] = answered
        self.send({kind: {"call_id": call_id, **fields}})
        return await answered

    async def answer(self, candidate: str, golden_id: str, spend: Spend) -> AnswerReply:
        call = AnswerCall(call_id=0, candidate=candidate, golden_id=golden_id, spend=spend)
        fields = call.model_dump(exclude={"call_id"})
        return AnswerReply.model_validate(await self._call("answer", fields))

    async def score(self, answer_id: str, objective: str, spend: Spend) -> ScoreReply:
        call = ScoreCall(call_id=0, answer_id=answer_id, objective=objective, spend=spend)
        fields = call.model_dump(exclude={"call_id"})
        return ScoreReply.model_validate(await self._call("score", fields))

    def round(self, report: Round) -> None:
        self.send({"round": report.model_dump()})

    def _read(self) -> None:
        while True:
            try:
                message = self._connection.recv()
            except (EOFError, OSError):
                os._exit(3)  # the calling process is gone: nothing waits for this one
            reply = message["reply"]
            self._loop.call_soon_threadsafe(self._answer, reply)

    def _answer(self, reply: dict[str, Any]) -> None:
        waiting = self._waiting.pop(int(reply["call_id"]), None)
        if waiting is not None and not waiting.done():
            waiting.set_result(reply)


async def _serve(request: OptimizationRequest, connection: Connection) -> None:
    started = time.perf_counter()
    with without_anthropic_sdk():
        from n8n_deepeval_pipeline.optimization.deepeval_search import DeepEvalSearch
    channel = _Channel(connection, asyncio.get_running_loop())
    channel.send({"ready": time.perf_counter() - started})
    outcome = await DeepEvalSearch(request, channel).run()
    channel.send({"done": outcome.model_dump()})


def main() -> None:
    """Serve one request; report the outcome or why it failed; exit without DeepEval's teardown."""
    connection = Connection(int(sys.argv[1]))
    exit_with_parent()
    request = OptimizationRequest.model_validate(connection.recv())
    try:
        asyncio.run(_serve(request, connection))
    except Exception as error:  # reported, not raised: the calling process names it
        message = redact(f"{type(error).__name__}: {error}", request.secrets)
        connection.send({"failed": message.splitlines()[0][:500] if message else "failed"})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
