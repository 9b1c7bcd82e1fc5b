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
from n8n_deepeval_pipeline.worker.child_channel import CallsToParent, Channel, connect


async def _serve(job: GenerateRequest | AttackRequest, channel: Channel) -> None:
    from n8n_deepeval_pipeline.red_team.deepteam_run import DeepTeamRun  # DeepTeam: here only

    run = DeepTeamRun(job.config, job.purpose, job.judge, job.concurrency)
    if isinstance(job, GenerateRequest):
        channel.send("done", await run.generate(job.cache_namespace))
        return

    def sent(outcome: AttackOutcome) -> None:
        channel.send("update", outcome)

    step = CallsToParent(channel, asyncio.get_running_loop())

    async def call(session_id: str, message: str) -> TargetReply:
        """One message to the workflow, through the step process, and its answer."""

        def numbered(call_id: int) -> TargetCall:
            return TargetCall(call_id=call_id, session_id=session_id, message=message)

        return TargetReply.model_validate(await step.ask(numbered))

    await run.play(job.seeds, job.runs, call, sent)
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
