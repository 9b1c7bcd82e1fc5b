"""A fake of the red team's worker process, speaking its protocol without DeepTeam.

``python -m tests.red_team.fake_worker FD``: it serves jobs one after another until the
step hangs up, as the real worker does. Asked to generate, it sends two seeds; asked to
play, it sends each seed's input to the workflow twice (two turns of one session, all
seeds at once) and reports the answers as the outcome. A seed whose input is ``die``
kills the process; ``fail`` makes it say it failed, quoting the judge's key, and exit.
"""

from __future__ import annotations

import asyncio
import os

from n8n_deepeval_pipeline.red_team.protocol import (
    JOBS,
    AttackOutcome,
    AttackRequest,
    AttackSeed,
    Generated,
    GenerateRequest,
    JudgeUsage,
    TargetCall,
    TargetReply,
)
from n8n_deepeval_pipeline.worker.child_channel import CallsToParent, Channel, connect


def main() -> None:
    asyncio.run(serve(connect()))


async def serve(channel: Channel) -> None:
    step = CallsToParent(channel, asyncio.get_running_loop())  # ends the process at hang-up
    while True:
        job = JOBS.validate_python((await step.asks.get()).body)
        if isinstance(job, GenerateRequest):
            seeds = [
                AttackSeed(attack_id=f"a00{n}", vulnerability="Excessive Agency",
                           vulnerability_class="ExcessiveAgency",
                           vulnerability_type="permissions", input=f"{job.purpose} {n}")
                for n in (1, 2)
            ]  # fmt: skip
            channel.send("done", Generated(seeds=seeds, usage=JudgeUsage()))
        else:
            await play(job, channel, step)


async def play(job: AttackRequest, channel: Channel, step: CallsToParent) -> None:
    async def call(session: str, message: str) -> TargetReply:
        def numbered(call_id: int) -> TargetCall:
            return TargetCall(call_id=call_id, session_id=session, message=message)

        return TargetReply.model_validate(await step.ask(numbered))

    async def one(seed: AttackSeed, run: int) -> None:
        if seed.input == "die":
            os._exit(9)
        if seed.input == "fail":
            secret = job.judge.api_key.get_secret_value() if job.judge.api_key else ""
            channel.send("failed", f"the judge refused {secret}")
            os._exit(1)
        session = f"{seed.attack_id}-{run}"
        first = await call(session, seed.input or "")
        second = await call(session, f"again: {seed.input}")
        outcome = AttackOutcome(
            attack_id=seed.attack_id,
            run_index=run,
            input=seed.input,
            actual_output=f"{first.content} | {second.content}",
            tools_called=first.tools_called + second.tools_called,
            error=first.error or second.error,
            error_kind="target_error" if first.error or second.error else None,
            target_calls=2,
        )
        channel.send("update", outcome)

    await asyncio.gather(*(one(seed, run) for seed in job.seeds for run in range(job.runs)))
    channel.send("done")


if __name__ == "__main__":
    main()
