"""A fake of the red team's worker process, speaking its protocol without DeepTeam.

``python -m tests.red_team.fake_worker FD``: it serves requests one after another until its
connection closes. Asked to generate, it sends two seeds; asked to play, it sends each
seed's input to the workflow twice (two turns of one session, all seeds at once) and
reports the answers as the outcome. A seed whose input is ``die`` kills the process;
``fail`` makes it say it failed, quoting the judge's key.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from multiprocessing.connection import Connection

from n8n_deepeval_pipeline.red_team.protocol import (
    AttackOutcome,
    AttackRequest,
    AttackSeed,
    Generated,
    GenerateRequest,
    JudgeUsage,
    TargetReply,
)


def main() -> None:
    asyncio.run(serve(Connection(int(sys.argv[1]))))


async def serve(connection: Connection) -> None:
    loop = asyncio.get_running_loop()
    requests: asyncio.Queue[dict | None] = asyncio.Queue()
    waiting: dict[int, asyncio.Future[TargetReply]] = {}

    def answer(reply: TargetReply) -> None:
        waiting.pop(reply.call_id).set_result(reply)

    def read() -> None:  # one reader for the process's life: replies, and the next requests
        while True:
            try:
                message = connection.recv()
            except (EOFError, OSError):
                loop.call_soon_threadsafe(requests.put_nowait, None)
                return
            if "reply" in message:
                loop.call_soon_threadsafe(answer, TargetReply.model_validate(message["reply"]))
            else:
                loop.call_soon_threadsafe(requests.put_nowait, message)

    threading.Thread(target=read, daemon=True).start()
    while (request := await requests.get()) is not None:
        if "generate" in request:
            job = GenerateRequest.model_validate(request["generate"])
            seeds = [
                AttackSeed(attack_id=f"a00{n}", vulnerability="Excessive Agency",
                           vulnerability_class="ExcessiveAgency",
                           vulnerability_type="permissions", input=f"{job.purpose} {n}")
                for n in (1, 2)
            ]  # fmt: skip
            generated = Generated(seeds=seeds, usage=JudgeUsage())
            connection.send({"generated": generated.model_dump()})
            continue
        await play(AttackRequest.model_validate(request["attack"]), connection, waiting)


async def play(
    job: AttackRequest, connection: Connection, waiting: dict[int, asyncio.Future[TargetReply]]
) -> None:
    loop = asyncio.get_running_loop()
    lock = threading.Lock()
    calls = iter(range(1, 1000))

    async def call(session: str, message: str) -> TargetReply:
        number = next(calls)
        answered = waiting[number] = loop.create_future()
        with lock:
            connection.send(
                {"call": {"call_id": number, "session_id": session, "message": message}}
            )
        return await answered

    async def one(seed: AttackSeed, run: int) -> None:
        if seed.input == "die":
            os._exit(9)
        if seed.input == "fail":
            secret = job.judge.api_key.get_secret_value() if job.judge.api_key else ""
            connection.send({"failed": f"the judge refused {secret}"})
            return
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
            target_calls=2,
        )
        with lock:
            connection.send({"outcome": outcome.model_dump()})

    await asyncio.gather(*(one(seed, run) for seed in job.seeds for run in range(job.runs)))
    with lock:
        connection.send({"done": True})


if __name__ == "__main__":
    main()
