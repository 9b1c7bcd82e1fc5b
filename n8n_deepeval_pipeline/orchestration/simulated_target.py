"""``agent_outputs`` of a simulated benchmark: one conversation per run, with a simulated user.

The conversations are played in the simulator process (DeepEval never enters this one);
here they are asked for, their answers' tools are read from the executions when the
answers did not carry them (one execution per turn, in the session's order), and each
becomes the run's output with what its simulated user cost. Each call the simulated user's
judge is answered is also written to a ledger as it arrives, charged to this run: a
simulation killed half-way, or played beside another run of the version, is charged what
it cost when the version's scores are stored (``chunked_scoring``'s ``collect``). Each of
those calls has the time an evaluation gives the judge.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

import dagster as dg

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.benchmark.simulation import SimulationConfig
from n8n_deepeval_pipeline.judging.call_ledger import LedgerTag
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.executions import steps_by_execution
from n8n_deepeval_pipeline.orchestration.progress import say_progress
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.score_journal import (
    SIMULATION_LEDGER,
    ScoreJournalResource,
)
from n8n_deepeval_pipeline.simulation.conversation import STOP_REASONS, SimulatedConversation
from n8n_deepeval_pipeline.simulation.golden import golden_runs
from n8n_deepeval_pipeline.simulation.launcher import simulate
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun


@dataclass(frozen=True)
class SimulatedUsers:
    """The benchmark's simulation: how it is played, by which judge, at what price.

    ``ledger``: where its judge's answered calls are charged to this run; ``call_limit_s``:
    the time each call has.
    """

    config: SimulationConfig
    judge: JudgeSpec
    prices: PriceTable
    ledger: LedgerTag
    call_limit_s: float


def simulated_users(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    judge: JudgeResource,
    score_journal: ScoreJournalResource,
) -> SimulatedUsers | None:
    """The benchmark's simulated users; None when it has no ``simulation`` section."""
    if benchmark.simulation is None:
        return None
    spec = judge.spec_for(benchmark.simulator_judge)
    ledger = score_journal.journal(benchmark.name, context.partition_key, SIMULATION_LEDGER)
    tag = ledger.ledger_tag(context.run_id)
    return SimulatedUsers(benchmark.simulation, spec, judge.prices(), tag, judge.call_limit_s)


def conversations(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    users: SimulatedUsers,
    target: WebhookTarget,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    executions_of: str | None,
) -> list[AgentOutput]:
    """Every run played as a conversation with ``target``; the runs' outputs.

    ``executions_of``: the workflow whose executions hold the tools of answers that did
    not carry them (None: not read).
    """
    config = users.config
    request = SimulationRequest(
        runs=golden_runs(runs, rows),
        judge=users.judge,
        target=target,
        url=n8n.webhook_url(target),
        env={name: os.environ[name] for name in target.env if name in os.environ},
        max_user_turns=config.max_user_turns,
        language=config.language,
        judge_call_limit_s=users.call_limit_s,
        ledger=users.ledger,
    )
    context.log.info(
        f"simulating {len(runs)} conversations with {request.target_identity}: "
        f"{users.judge.label} plays the user, up to {config.max_user_turns} user turns each"
    )
    step = max(1, len(runs) // 10)

    def finished(conversation: SimulatedConversation, done: int, total: int) -> None:
        if done % step == 0 or done == total:
            say_progress(context, f"simulated {done}/{total} conversations")

    played, times = simulate(request, finished)
    context.log.info(
        f"simulator: DeepEval imported in {times.import_s:.1f} s, "
        f"conversations played in {times.simulate_s:.1f} s"
    )
    if executions_of is not None and any(
        answer.intermediate_steps is None for c in played for answer in c.answers()
    ):
        played = _with_execution_steps(context, n8n, executions_of, played)
    by_run = {run.run_id: run for run in runs}
    outputs = [
        conversation.agent_output(
            by_run[conversation.run_id].workflow_hash,
            users.judge.label,
            config.max_user_turns,
            users.prices.cost(
                users.judge.model, conversation.prompt_tokens, conversation.completion_tokens
            ),
        )
        for conversation in played
    ]
    context.log.info("stopping reasons: " + _reasons(outputs))
    return outputs


def _with_execution_steps(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    workflow_id: str,
    played: list[SimulatedConversation],
) -> list[SimulatedConversation]:
    """The answers' tools read from the session's executions, one execution per turn."""
    calls = sum(len(conversation.answers()) + 1 for conversation in played)
    with n8n.client() as client:
        by_session = steps_by_execution(client.executions(workflow_id, limit=calls + 20))
    found = [c for c in played if c.session_id in by_session]
    context.log.info(f"steps read from executions for {len(found)}/{len(played)} conversations")
    return [
        conversation.with_execution_steps(by_session[conversation.session_id])
        if conversation.session_id in by_session
        else conversation
        for conversation in played
    ]


def _reasons(outputs: list[AgentOutput]) -> str:
    counts = Counter(output.stop_reason for output in outputs)
    return ", ".join(f"{reason} {counts[reason]}" for reason in STOP_REASONS if counts[reason])


def simulation_metadata(outputs: list[AgentOutput]) -> dict[str, Any]:
    """Figures of a simulated ``agent_outputs`` the UI shows: why conversations stopped."""
    simulated = [output for output in outputs if output.simulation is not None]
    if not simulated:
        return {}
    counts = Counter(output.stop_reason for output in simulated)
    turns = [int((output.simulation or {}).get("userTurns", 0)) for output in simulated]
    costs = [(output.simulation or {}).get("costUsd") for output in simulated]
    known = [float(cost) for cost in costs if cost is not None]
    return {
        **{f"stopped_{reason}": counts[reason] for reason in STOP_REASONS},
        "mean_user_turns": round(sum(turns) / len(turns), 2),
        "simulator_judge_calls": sum(
            int((output.simulation or {}).get("judgeCalls", 0)) for output in simulated
        ),
        "simulator_cost_usd": round(sum(known), 6) if known else None,
    }
