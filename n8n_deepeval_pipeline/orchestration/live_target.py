"""A live run of the workflow for ``agent_outputs``: call it, and make sure of the version.

A webhook target is called as it is; a workflow target through a harness copy that runs
from its start node to its end node. A simulated benchmark plays a conversation per run
instead of one call (``simulated_target``). Outputs are stored under the partition (the
workflow version) only if the workflow hashed to that version both before and after the
calls: an edit during the run, or a partition of an older version, is refused instead of
being labelled wrongly. A partition may be a variant of the workflow (``target.variants``):
its harness copy is made from the variant's graph. After the calls, the runs' executions
are read once for the steps answers lack and for the workflow's own model tokens, priced.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import dagster as dg

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef, WebhookTarget, WorkflowTarget
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.n8n_api.executions import model_calls_by_session, steps_by_session
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    HarnessMocks,
    harness_body,
    harness_mocks,
    harness_problems,
    harness_webhook,
    kept_copy_note,
    remove_stale_copies,
    unmocked_services,
)
from n8n_deepeval_pipeline.n8n_api.workflow_usage import with_usage
from n8n_deepeval_pipeline.n8n_data.agent_steps import marked_mocked
from n8n_deepeval_pipeline.orchestration.automation import CALLS_SHARED_BY
from n8n_deepeval_pipeline.orchestration.call_barrier import start_together
from n8n_deepeval_pipeline.orchestration.judged_mocks import judge_written_rows, unmocked_runs
from n8n_deepeval_pipeline.orchestration.progress import say_progress
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.score_journal import ScoreJournalResource
from n8n_deepeval_pipeline.orchestration.simulated_target import (
    SimulatedUsers,
    conversations,
    simulated_users,
    simulation_metadata,
)
from n8n_deepeval_pipeline.summary.workflow_usage import workflow_usage
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.workflow.model_nodes import model_names
from n8n_deepeval_pipeline.workflow.variants import family


class VersionChangedError(RuntimeError):
    """The workflow is not (or no longer) the version of the partition being materialised."""


def workflow_at_version(
    benchmark: Benchmark, n8n: N8nResource, partition: str, when: str
) -> dict[str, Any]:
    """The partition's version as it is now: the workflow, or the variant of it.

    Refuses a workflow that is no longer the partition's version (nor one of its variants').
    """
    workflow, _ = n8n.workflow(benchmark)
    members = family(workflow, benchmark.variants)
    found = next((member for member in members if member.key == partition), None)
    if found is None:
        current = ", ".join(f"{member.name} {member.key}" for member in members)
        raise VersionChangedError(
            f"{when} the calls the workflow hashes to {current}, not to this partition "
            f"{partition}: its outputs would not belong to this version. Materialise the "
            "current version's partition instead (the sensor adds it)."
        )
    return found.workflow


def call_share(target: WebhookTarget | WorkflowTarget, tags: Mapping[str, str]) -> int:
    """A run's share of ``maxConcurrency`` when versions call at the same time.

    A workflow run beside its variants shares the target's call slots with them, so that
    together they load n8n and its models as one run would (each has at least one slot).
    """
    shared_by = int(tags.get(CALLS_SHARED_BY, "1") or 1)
    return max(1, target.max_concurrency // max(shared_by, 1))


@dataclass(frozen=True)
class ExecutionReading:
    """Where a run's executions are, what ran there, what its models cost, what to read.

    The workflow in n8n or the harness copy; the graph, whose model nodes name their
    models; the price table; ``steps``: fill in the steps of answers without them.
    """

    workflow_id: str
    workflow: dict[str, Any]
    prices: PriceTable
    steps: bool


def live_outputs(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    n8n: N8nResource,
    judge: JudgeResource,
    score_journal: ScoreJournalResource,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
) -> list[AgentOutput]:
    """Call the workflow for every run, between two checks of the workflow's version."""
    target = benchmark.target
    partition = context.partition_key
    workflow = workflow_at_version(benchmark, n8n, partition, "before")
    users = simulated_users(context, benchmark, judge, score_journal)
    assert isinstance(target, WebhookTarget | WorkflowTarget)
    share = call_share(target, context.run.tags)
    if share != target.max_concurrency:
        context.log.info(f"calling with {share} of maxConcurrency {target.max_concurrency}")
        target = target.model_copy(update={"max_concurrency": share})
    prices = judge.prices().extended(target.prices)
    if isinstance(target, WorkflowTarget):
        problems = harness_problems(target, workflow, variants=False)
        if problems:
            raise ValueError("target: " + "; ".join(problems))
        mocks = harness_mocks(target, workflow)  # MCP servers listed before any call
        if mocks.servers:
            offered = ", ".join(
                f"{name} ({len(s.tools)} tools)" for name, s in mocks.servers.items()
            )
            context.log.info(f"MCP servers: {offered}")
        rows, failed = judge_written_rows(
            context, target, workflow, rows, judge.spec_for(benchmark.judge), mocks.servers
        )
        called = [run for run in runs if run.row_id not in failed]
        outputs = (  # no copy is made when no row is left to call
            _through_harness(
                context, benchmark.name, target, workflow, mocks, n8n, called, rows, users, prices
            )
            if called
            else []
        )
        by_run = {output.run_id: output for output in outputs + unmocked_runs(runs, failed)}
        outputs = [by_run[run.run_id] for run in runs]
    else:
        assert isinstance(target, WebhookTarget)
        if not isinstance(benchmark.workflow, N8nWorkflowRef):
            context.log.warning(
                "the workflow is a file: the version n8n serves cannot be checked; "
                "name it with workflow: {id: …} to have it checked before and after the calls"
            )
        reading = None  # a webhook's executions are found through its workflow in n8n
        if isinstance(benchmark.workflow, N8nWorkflowRef):
            steps = target.steps_from_execution
            reading = ExecutionReading(benchmark.workflow.id, workflow, prices, steps)
        else:
            context.log.info(
                "the workflow's own tokens are read from its executions in n8n: name it with "
                "workflow: {id: …} to have them measured"
            )
        outputs = _call(context, n8n, target, runs, rows, users, reading)
    workflow_at_version(benchmark, n8n, partition, "after")
    return outputs


def _call(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    target: WebhookTarget,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    users: SimulatedUsers | None,
    reading: ExecutionReading | None,
) -> list[AgentOutput]:
    """One call per run, or one conversation per run with simulated users.

    ``reading``: where the runs' executions are, to read the workflow's model usage and
    (if it says so) the steps answers lack. Versions of a family run start calling
    together (``call_barrier``).
    """
    tags = context.run.tags
    shared_by = int(tags.get(CALLS_SHARED_BY, "1") or 1)
    start_together(tags, context.partition_key, shared_by, context.log.info)
    if users is not None:
        executions_of = reading.workflow_id if reading is not None and reading.steps else None
        played = conversations(context, n8n, users, target, runs, rows, executions_of)
        # a conversation's steps are its own to read; its usage is its session's
        return played if reading is None else from_executions(context, n8n, reading, played, False)
    caller = n8n.webhook_caller(target)
    context.log.info(f"calling {caller.identity} for {len(runs)} runs")
    step = max(1, len(runs) // 10)

    def progress(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            say_progress(context, f"called {done}/{total}")

    try:
        outputs = caller.outputs(runs, {row.row_id: row for row in rows}, progress)
    finally:
        caller.close()
    if reading is not None:
        outputs = from_executions(context, n8n, reading, outputs, reading.steps)
    return outputs


def _through_harness(
    context: dg.AssetExecutionContext,
    benchmark_name: str,
    target: WorkflowTarget,
    workflow: dict[str, Any],
    mocks: HarnessMocks,
    n8n: N8nResource,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    users: SimulatedUsers | None,
    prices: PriceTable,
) -> list[AgentOutput]:
    """Run the workflow (or a variant of it) from its start to its end node through a copy.

    The variants were checked against the workflow itself when the version was read, the
    target against the workflow before ``mocks`` were made.
    """
    for node in unmocked_services(target, workflow):
        context.log.warning(f"acts on a real service: {node}")
    label = f"{benchmark_name} {context.partition_key}"
    # Every call may take its whole timeout, maxConcurrency at a time (a conversation's
    # calls one after the other).
    calls = users.config.max_user_turns if users is not None else 1
    time_limit_s = target.timeout_s * calls * -(-len(runs) // target.max_concurrency)
    with n8n.client() as client:
        for name in remove_stale_copies(client, benchmark_name):
            context.log.warning(f"removed a harness copy whose run is over: {name}")
        with harness_webhook(
            client,
            n8n.base_url or "",
            workflow,
            target,
            label,
            time_limit_s,
            mocks.replacements,
        ) as (copy_id, url):
            if target.keep_harness_copy:
                context.log.info(kept_copy_note(n8n.base_url or "", copy_id))
            webhook = target.as_webhook(url, harness_body(target, workflow))
            reading = ExecutionReading(copy_id, workflow, prices, target.steps_from_execution)
            outputs = _call(context, n8n, webhook, runs, rows, users, reading)
    tools = mocks.mocked_tools
    servers = [server.model_dump(mode="json") for server in mocks.servers.values()] or None
    return [
        output.model_copy(
            update={
                "intermediate_steps": marked_mocked(output.intermediate_steps, tools),
                "turns": _turns_marked_mocked(output.turns, tools),
                "mcp_servers": servers,
            }
        )
        for output in outputs
    ]


def _turns_marked_mocked(turns: list[Any] | None, tools: set[str]) -> list[Any] | None:
    """A conversation's turns, the steps of mocked tools marked in each answer."""
    if not turns or not tools:
        return turns
    return [
        {**turn, "intermediateSteps": marked_mocked(turn["intermediateSteps"], tools)}
        if isinstance(turn, dict) and isinstance(turn.get("intermediateSteps"), list)
        else turn
        for turn in turns
    ]


# n8n may answer a webhook a moment before it has saved the execution: read again this
# many times, this long apart, while some run's session is not there yet.
_READS, _READ_PAUSE_S = 3, 0.5


def from_executions(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    reading: ExecutionReading,
    outputs: list[AgentOutput],
    steps: bool,
) -> list[AgentOutput]:
    """Every run's model usage, and (``steps``) the steps of answers without them.

    Both are read from the runs' executions in n8n, found by session, in one read.
    """
    sessions = {output.session_id for output in outputs if output.session_id is not None}
    if not sessions:
        return outputs
    # One execution per message sent: a run of several messages is several executions.
    sent = sum(max(len(output.turns or []) // 2, 1) for output in outputs)
    with n8n.client() as client:
        for attempt in range(_READS):
            executions = client.executions(reading.workflow_id, limit=sent + 20)
            calls = model_calls_by_session(executions)
            if sessions <= calls.keys() or attempt == _READS - 1:
                break
            time.sleep(_READ_PAUSE_S)
    measured = sessions & calls.keys()
    context.log.info(f"model usage read from executions for {len(measured)}/{len(sessions)} runs")
    outputs = with_usage(outputs, calls, model_names(reading.workflow), reading.prices)
    missing = {
        output.session_id
        for output in outputs
        if output.error is None and output.intermediate_steps is None
    }
    if not steps or not missing:
        return outputs
    found_steps = steps_by_session(executions)
    found = {session: found_steps[session] for session in missing if session in found_steps}
    context.log.info(f"steps read from executions for {len(found)}/{len(missing)} runs")
    return [
        output.model_copy(update={"intermediate_steps": found[output.session_id]})
        if output.intermediate_steps is None and output.session_id in found
        else output
        for output in outputs
    ]


def outputs_metadata(outputs: list[AgentOutput]) -> dict[str, Any]:
    """Figures of the agent_outputs table the UI charts: latency, the workflow's tokens, cost."""
    latencies = [output.latency_s for output in outputs if output.latency_s is not None]
    metadata: dict[str, Any] = {
        "runs": len(outputs),
        "runs_without_output": sum(1 for output in outputs if output.error),
        "target_errors": sum(1 for output in outputs if output.error_kind == "target_error"),
        "mean_latency_s": fmean(latencies) if latencies else 0.0,
        **simulation_metadata(outputs),
    }
    usage = workflow_usage(outputs)
    measured = usage.measured_runs or None
    figures = {
        "latency_p50_s": usage.latency_p50_s,
        "latency_p95_s": usage.latency_p95_s,
        "llm/measured_runs": measured,
        "llm/prompt_tokens": usage.prompt_tokens if measured else None,
        "llm/completion_tokens": usage.completion_tokens if measured else None,
        "llm/tokens_per_run": usage.tokens_per_run,
        "llm/cost_usd": usage.cost_usd,  # absent when unpriced: unpriced is not free
        "llm/cost_per_run_usd": usage.cost_per_run_usd,
    }
    metadata.update({name: value for name, value in figures.items() if value is not None})
    if usage.unpriced_models:
        metadata["llm/unpriced_models"] = ", ".join(usage.unpriced_models)
    return metadata
