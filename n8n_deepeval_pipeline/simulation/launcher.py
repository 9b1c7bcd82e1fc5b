"""The simulator process asked for its conversations and read back (no DeepEval here).

It is started by ``worker.launcher`` (the workers' environment, a scratch working
folder, its log kept in the home when it fails, a deadline); the judge's key and the
target's URL travel in the request over its private connection. It answers with
``ready`` (DeepEval imported), an ``update`` per conversation as it finishes, and
``done``; a simulator that fails, dies or overruns is a ``ChildFailed`` with its exit
code and last log lines. Within ``started_ahead()`` (a CLI run whose steps run in its own
process) one is started at once: DeepEval's import (~2 s of CPU) then overlaps the run's
set-up, and the simulation step finds it ready, unless its environment holds one of the
request's credentials (then another is started without them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager

from pydantic import BaseModel

from n8n_deepeval_pipeline.simulation.conversation import SimulatedConversation
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker import launcher as children
from n8n_deepeval_pipeline.worker.launcher import ChildSpec, launched

MODULE = "n8n_deepeval_pipeline.simulation.process"
Finished = Callable[[SimulatedConversation, int, int], None]  # conversation, done, total
_START_S = 120.0  # DeepEval's import on a busy machine, with room
_JUDGE_CALLS_PER_TURN = 2  # the user's turn, and the check whether the outcome is reached


class SimulationFailed(RuntimeError):
    """The simulator reported no conversation for some of the runs."""


class SimulationTimes(BaseModel):
    """How long the simulator process took: DeepEval's import, and the conversations."""

    import_s: float = 0.0
    simulate_s: float = 0.0


def time_limit_s(request: SimulationRequest) -> float:
    """Long enough for every conversation's turns, at the target's concurrency.

    Each user turn takes at most its judge calls (each bounded by the request's limit)
    and one call of the workflow.
    """
    target = request.target
    turn_s = _JUDGE_CALLS_PER_TURN * request.judge_call_limit_s + target.timeout_s
    rounds = math.ceil(len(request.runs) / target.max_concurrency)
    return _START_S + (request.max_user_turns + 1) * turn_s * max(rounds, 1)


def _spec(deadline_s: float | None) -> ChildSpec:
    return ChildSpec(name="the simulator", module=MODULE, deadline_s=deadline_s)


def started_ahead() -> AbstractContextManager[None]:
    """A simulator started now, for the first simulation of the block."""
    return children.started_ahead(_spec(None))


def simulate(
    request: SimulationRequest, finished: Finished | None = None
) -> tuple[list[SimulatedConversation], SimulationTimes]:
    """Every run's conversation, in the request's order, and how long the process took."""
    spec = _spec(time_limit_s(request))
    found: dict[str, SimulatedConversation] = {}
    times = SimulationTimes()
    with launched(spec, request.secrets) as child:
        child.send("ask", request)
        while (message := child.receive()).kind != "done":
            if message.kind == "ready":
                times.import_s = float(message.body)
            elif message.kind == "update":
                conversation = message.of(SimulatedConversation)
                found[conversation.run_id] = conversation
                if finished is not None:
                    finished(conversation, len(found), len(request.runs))
        times.simulate_s = float(message.body)
        child.finish()
    missing = [golden.run_id for golden in request.runs if golden.run_id not in found]
    if missing:
        raise SimulationFailed(f"the simulator reported no conversation for {missing[:3]}")
    return [found[golden.run_id] for golden in request.runs], times
