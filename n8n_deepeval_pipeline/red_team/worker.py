"""The red team's worker process: ``python -m n8n_deepeval_pipeline.red_team.worker FD``.

The only process that imports DeepTeam. It reads one request on its connection (generate
the attack set, or play attacks), sends every message DeepTeam has for the workflow back
as a ``call`` and waits for its ``reply``, sends each played attack's ``outcome`` as soon
as it is judged, and ends with ``generated`` or ``done`` (or ``failed``, its reason with
the judge's credentials taken out). DeepTeam reads its settings at import: without the
telemetry opt-out it would contact outside hosts, so the process refuses to start without
it. It exits when the step process above it is gone.
"""

from __future__ import annotations

import asyncio
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
    """The connection to the step process: messages out, replies to calls back in."""

    def __init__(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._connection = connection
        self._loop = loop
        self._send_lock = threading.Lock()
        self._waiting: dict[int, asyncio.Future[TargetReply]] = {}
        self._next_call = 0
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
                os._exit(3)  # the step process is gone: nothing is waiting for this one
            reply = TargetReply.model_validate(message["reply"])
            self._loop.call_soon_threadsafe(self._answer, reply)

    def _answer(self, reply: TargetReply) -> None:
        waiting = self._waiting.pop(reply.call_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(reply)


async def _serve(job: GenerateRequest | AttackRequest, connection: Connection) -> None:
    from n8n_deepeval_pipeline.red_team.deepteam_run import DeepTeamRun  # DeepTeam: here only

    channel = _Channel(connection, asyncio.get_running_loop())
    run = DeepTeamRun(job.config, job.purpose, job.judge, job.concurrency)
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
    """Serve one request, then exit without tearing DeepEval's modules down."""
    connection = Connection(int(sys.argv[1]))
    missing = [name for name, value in DEEPTEAM_ENV.items() if os.environ.get(name) != value]
    if missing:
        connection.send({"failed": f"the red team's worker needs {', '.join(missing)} set"})
        os._exit(2)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    job = _job(connection.recv())
    try:
        asyncio.run(_serve(job, connection))
    except Exception as error:
        reason = redact(f"{type(error).__name__}: {error}", job.judge.secrets)
        connection.send({"failed": reason})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(3)


if __name__ == "__main__":
    main()
