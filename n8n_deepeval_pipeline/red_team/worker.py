"""The red team's worker process: ``python -m n8n_deepeval_pipeline.red_team.worker FD``.

The only process that imports DeepTeam, which it does as it starts, before any job (a
worker started ahead of its first job by ``worker.launcher`` is ready when it comes). It
then serves the jobs asked (``ask``: generate the attack set, or play attacks) one after
another until the step process hangs up: it sends every message DeepTeam has for the
workflow back as a ``call`` and waits for its ``reply``, sends each played attack's
outcome as an ``update`` as soon as it is judged, and ends each job with ``done``, or
with ``failed`` (its reason with the judge's credentials taken out) and its exit. DeepTeam
reads its settings at import: without the telemetry opt-out it would contact outside
hosts, so the process refuses to start without it. It exits when the step process above
it is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

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
    CallsToParent,
    Channel,
    ChannelClosed,
    connect,
    exit_now,
)


async def _serve(channel: Channel) -> int:
    """Every job asked, one at a time: until one fails (exit 1) or the step hangs up."""
    from n8n_deepeval_pipeline.worker.zygote import without_anthropic_sdk

    with without_anthropic_sdk():  # as the metric workers import DeepEval: 1.3 s less CPU
        from n8n_deepeval_pipeline.red_team.deepteam_run import DeepTeamRun  # DeepTeam: here only

    step = CallsToParent(channel, asyncio.get_running_loop())  # one reader for every job
    while True:
        job = JOBS.validate_python((await step.asks.get()).body)
        try:
            run = DeepTeamRun(job.config, job.purpose, job.judge, job.concurrency)
            await _do(run, job, channel, step)
        except Exception as error:
            channel.send("failed", redact(f"{type(error).__name__}: {error}", job.judge.secrets))
            return 1


async def _do(
    run: Any, job: GenerateRequest | AttackRequest, channel: Channel, step: CallsToParent
) -> None:
    if isinstance(job, GenerateRequest):
        channel.send("done", await run.generate(job.cache_namespace))
        return

    def sent(outcome: AttackOutcome) -> None:
        channel.send("update", outcome)

    async def call(session_id: str, message: str) -> TargetReply:
        """One message to the workflow, through the step process, and its answer."""

        def numbered(call_id: int) -> TargetCall:
            return TargetCall(call_id=call_id, session_id=session_id, message=message)

        return TargetReply.model_validate(await step.ask(numbered))

    await run.play(job.seeds, job.runs, call, sent)
    channel.send("done")


def main() -> None:
    """Serve jobs until one fails or the step hangs up; exit without tearing DeepEval down."""
    channel = connect()
    missing = [name for name, value in DEEPTEAM_ENV.items() if os.environ.get(name) != value]
    if missing:
        channel.send("failed", f"the red team's worker needs {', '.join(missing)} set")
        os._exit(2)
    try:
        code = asyncio.run(_serve(channel))
    except Exception as error:  # DeepTeam's import failed: said to the first job's step
        with contextlib.suppress(ChannelClosed):
            channel.send("failed", f"{type(error).__name__}: {error}")
        code = 1
    exit_now(code)


if __name__ == "__main__":
    main()
