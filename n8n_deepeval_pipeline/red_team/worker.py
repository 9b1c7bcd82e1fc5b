"""The red team's worker process: ``python -m n8n_deepeval_pipeline.red_team.worker FD``.

The only process that imports DeepTeam, which it does as it starts, before any request
(a worker started ahead of its first request is ready when it comes). It then serves the
requests on its connection one after another until the connection closes: generate the
attack set, or play attacks. It sends every message DeepTeam has for the workflow back
as a ``call`` and waits for its ``reply``, sends each played attack's ``outcome`` as soon
as it is judged, and ends each request with ``generated`` or ``done`` (or ``failed``, its
reason with the judge's credentials taken out). DeepTeam reads its settings at import:
without the telemetry opt-out it would contact outside hosts, so the process refuses to
start without it. It exits when the step process above it is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from n8n_deepeval_pipeline.red_team.protocol import (
    DEEPTEAM_ENV,
    AttackOutcome,
    AttackRequest,
    GenerateRequest,
    TargetCall,
    TargetReply,
)
from n8n_deepeval_pipeline.redaction import redact


class _Channel:
    """The connection to the step process: requests and replies in, messages out.

    One thread reads the connection for the worker's whole life: a reply goes to the call
    that waits for it, a request (or the connection's end, None) to ``requests``.
    """

    def __init__(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._connection = connection
        self._loop = loop
        self._send_lock = threading.Lock()
        self._waiting: dict[int, asyncio.Future[TargetReply]] = {}
        self._next_call = 0
        self.requests: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        threading.Thread(target=self._read, name="replies", daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self._connection.send(message)

    async def call(self, session_id: str, message: str) -> TargetReply:
        """Send one message to the workflow (through the step process) and await its answer."""
        self._next_call += 1  # only the event loop's thread counts
        call = TargetCall(call_id=self._next_call, session_id=session_id, message=message)
        answered: asyncio.Future[TargetReply] = self._loop.create_future()
        self._waiting[call.call_id] = answered
        self.send({"call": call.model_dump()})
        return await answered

    def _read(self) -> None:
        while True:
            try:
                message = self._connection.recv()
            except (EOFError, OSError):
                self._loop.call_soon_threadsafe(self.requests.put_nowait, None)
                return
            if "reply" in message:
                reply = TargetReply.model_validate(message["reply"])
                self._loop.call_soon_threadsafe(self._answer, reply)
            else:
                self._loop.call_soon_threadsafe(self.requests.put_nowait, message)

    def _answer(self, reply: TargetReply) -> None:
        waiting = self._waiting.pop(reply.call_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(reply)


async def _serve(connection: Connection) -> None:
    """Every request, one at a time, until the step process hangs up."""
    from n8n_deepeval_pipeline.worker.zygote import without_anthropic_sdk

    with without_anthropic_sdk():  # as the metric workers import DeepEval: 1.3 s less CPU
        from n8n_deepeval_pipeline.red_team.deepteam_run import DeepTeamRun  # DeepTeam: here only

    channel = _Channel(connection, asyncio.get_running_loop())
    while (request := await channel.requests.get()) is not None:
        job = _job(request)
        try:
            await _answer(DeepTeamRun(job.config, job.purpose, job.judge, job.concurrency), job,
                          channel)  # fmt: skip
        except Exception as error:
            channel.send({"failed": redact(f"{type(error).__name__}: {error}", job.judge.secrets)})


async def _answer(run: Any, job: GenerateRequest | AttackRequest, channel: _Channel) -> None:
    if isinstance(job, GenerateRequest):
        generated = await run.generate(job.cache_namespace)
        channel.send({"generated": generated.model_dump()})
        return

    def sent(outcome: AttackOutcome) -> None:
        channel.send({"outcome": outcome.model_dump()})

    await run.play(job.seeds, job.runs, channel.call, sent)
    channel.send({"done": True})


def _job(request: dict[str, Any]) -> GenerateRequest | AttackRequest:
    if "generate" in request:
        return GenerateRequest.model_validate(request["generate"])
    return AttackRequest.model_validate(request["attack"])


def main() -> None:
    """Serve requests until the step process hangs up, then exit without tearing down."""
    connection = Connection(int(sys.argv[1]))
    missing = [name for name, value in DEEPTEAM_ENV.items() if os.environ.get(name) != value]
    if missing:
        connection.send({"failed": f"the red team's worker needs {', '.join(missing)} set"})
        os._exit(2)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    try:
        asyncio.run(_serve(connection))
    except Exception as error:  # DeepTeam's import failed: said to the first request
        with contextlib.suppress(OSError):
            connection.send({"failed": f"{type(error).__name__}: {error}"})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(3)


if __name__ == "__main__":
    main()
