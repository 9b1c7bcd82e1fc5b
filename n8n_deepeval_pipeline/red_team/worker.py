"""The red team's worker process: ``python -m n8n_deepeval_pipeline.red_team.worker FD``.

The only process that imports DeepTeam. Started by ``worker.launcher``, it reads one job
(``ask``: generate the attack set, or play attacks), sends every message DeepTeam has for
the workflow back as a ``call`` and waits for its ``reply``, sends each played attack's
outcome as an ``update`` as soon as it is judged, and ends with ``done`` (or ``failed``,
its reason with the judge's credentials taken out). DeepTeam reads its settings at import:
without the telemetry opt-out it would contact outside hosts, so the process refuses to
start without it. It exits when the step process above it is gone.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading

from n8n_deepeval_pipeline.red_team.protocol import (
    DEEPTEAM_ENV,
    JOBS,
    AttackOutcome,
    AttackRequest,
    GenerateRequest,
    TargetCall,
    TargetReply,
)
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.worker.child_channel import (
    PARENT_GONE_EXIT,
    Channel,
    ChannelClosed,
    connect,
)


class _Calls:
    """The workflow's answers, asked through the step process: each call awaits its reply."""

    def __init__(self, channel: Channel, loop: asyncio.AbstractEventLoop) -> None:
        self._channel = channel
        self._loop = loop
        self._waiting: dict[int, asyncio.Future[TargetReply]] = {}
        self._next_call = 0
        threading.Thread(target=self._read, name="replies", daemon=True).start()

    async def call(self, session_id: str, message: str) -> TargetReply:
        """Send one message to the workflow (through the step process) and await its answer."""
        self._next_call += 1  # only the event loop's thread counts
        call = TargetCall(call_id=self._next_call, session_id=session_id, message=message)
        answered: asyncio.Future[TargetReply] = self._loop.create_future()
        self._waiting[call.call_id] = answered
        self._channel.send("call", call)
        return await answered

    def _read(self) -> None:
        while True:
            try:
                message = self._channel.receive()
            except ChannelClosed:
                os._exit(PARENT_GONE_EXIT)  # the step process is gone: nothing waits for this one
            if message is not None and message.kind == "reply":
                reply = message.of(TargetReply)
                self._loop.call_soon_threadsafe(self._answer, reply)

    def _answer(self, reply: TargetReply) -> None:
        waiting = self._waiting.pop(reply.call_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(reply)


async def _serve(job: GenerateRequest | AttackRequest, channel: Channel) -> None:
    from n8n_deepeval_pipeline.red_team.deepteam_run import DeepTeamRun  # DeepTeam: here only

    run = DeepTeamRun(job.config, job.purpose, job.judge, job.concurrency)
    if isinstance(job, GenerateRequest):
        channel.send("done", await run.generate(job.cache_namespace))
        return

    def sent(outcome: AttackOutcome) -> None:
        channel.send("update", outcome)

    calls = _Calls(channel, asyncio.get_running_loop())
    await run.play(job.seeds, job.runs, calls.call, sent)
    channel.send("done")


def main() -> None:
    """Serve one job, then exit without tearing DeepEval's modules down."""
    channel = connect()
    missing = [name for name, value in DEEPTEAM_ENV.items() if os.environ.get(name) != value]
    if missing:
        channel.send("failed", f"the red team's worker needs {', '.join(missing)} set")
        os._exit(2)
    asked = channel.receive()
    assert asked is not None
    job = JOBS.validate_python(asked.body)
    code = 0
    try:
        asyncio.run(_serve(job, channel))
    except Exception as error:
        channel.send("failed", redact(f"{type(error).__name__}: {error}", job.judge.secrets))
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
