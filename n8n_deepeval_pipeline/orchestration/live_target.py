"""A live run of the workflow for ``agent_outputs``: call it, and make sure of the version.

A webhook target is called as it is; a workflow target through a harness copy that runs
from its start node to its end node. A simulated benchmark plays a conversation per run
instead of one call (``simulated_target``). Outputs are stored under the partition (the
workflow version) only if the workflow hashed to that version both before and after the
calls: an edit during the run, or a partition of an older version, is refused instead of
being labelled wrongly.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

import dagster as dg

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef, WebhookTarget, WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.executions import steps_by_session
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    harness_body,
    harness_problems,
    harness_webhook,
    mock_answers,
    remove_stale_copies,
    unmocked_services,
)
from n8n_deepeval_pipeline.n8n_data.agent_steps import marked_mocked, tool_name
from n8n_deepeval_pipeline.orchestration.judged_mocks import judge_written_rows, unmocked_runs
from n8n_deepeval_pipeline.orchestration.progress import say_progress
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.simulated_target import (
    SimulatedUsers,
    conversations,
    simulated_users,
    simulation_metadata,
)
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.workflow.hashing import version_key, workflow_hash
from n8n_deepeval_pipeline.workflow.mocks import mocked_nodes


class VersionChangedError(RuntimeError):
    """The workflow is not (or no longer) the version of the partition being materialised."""


def workflow_at_version(
    benchmark: Benchmark, n8n: N8nResource, partition: str, when: str
) -> dict[str, Any]:
    """The workflow as it is now; refuses one that is not the partition's version."""
    workflow, _ = n8n.workflow(benchmark)
    current = version_key(workflow_hash(workflow))
    if current != partition:
        raise VersionChangedError(
            f"{when} the calls the workflow hashes to {current}, not to this partition "
            f"{partition}: its outputs would not belong to this version. Materialise the "
            "current version's partition instead (the sensor adds it)."
        )
    return workflow


def live_outputs(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    n8n: N8nResource,
    judge: JudgeResource,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
) -> list[AgentOutput]:
    """Call the workflow for every run, between two checks of the workflow's version."""
    target = benchmark.target
    partition = context.partition_key
    workflow = workflow_at_version(benchmark, n8n, partition, "before")
    users = simulated_users(benchmark, judge)
    if isinstance(target, WorkflowTarget):
        rows, failed = judge_written_rows(
            context, target, workflow, rows, judge.spec_for(benchmark.judge)
        )
        called = [run for run in runs if run.row_id not in failed]
        outputs = (  # no copy is made when no row is left to call
            _through_harness(context, benchmark.name, target, workflow, n8n, called, rows, users)
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
        executions_of = None  # a webhook's executions are found through its workflow in n8n
        if isinstance(benchmark.workflow, N8nWorkflowRef) and target.steps_from_execution:
            executions_of = benchmark.workflow.id
        outputs = _call(context, n8n, target, runs, rows, users, executions_of)
    workflow_at_version(benchmark, n8n, partition, "after")
    return outputs


def _call(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    target: WebhookTarget,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    users: SimulatedUsers | None,
    executions_of: str | None,
) -> list[AgentOutput]:
    """One call per run, or one conversation per run with simulated users.

    ``executions_of``: the workflow whose executions hold the steps answers lack.
    """
    if users is not None:
        return conversations(context, n8n, users, target, runs, rows, executions_of)
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
    if executions_of is not None:
        outputs = with_execution_steps(context, n8n, executions_of, outputs)
    return outputs


def _through_harness(
    context: dg.AssetExecutionContext,
    benchmark_name: str,
    target: WorkflowTarget,
    workflow: dict[str, Any],
    n8n: N8nResource,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    users: SimulatedUsers | None,
) -> list[AgentOutput]:
    """Run the workflow from its start to its end node through a harness copy."""
    problems = harness_problems(target, workflow)
    if problems:
        raise ValueError("target: " + "; ".join(problems))
    for node in unmocked_services(target, workflow):
        context.log.warning(f"acts on a real service: {node}")
    answers = mock_answers(target, workflow)
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
            mocked_nodes(workflow, answers),
        ) as (copy_id, url):
            webhook = target.as_webhook(url, harness_body(target, workflow))
            executions_of = copy_id if target.steps_from_execution else None
            outputs = _call(context, n8n, webhook, runs, rows, users, executions_of)
    tools = {tool_name(name) for name in answers}
    return [
        output.model_copy(
            update={
                "intermediate_steps": marked_mocked(output.intermediate_steps, tools),
                "turns": _turns_marked_mocked(output.turns, tools),
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


def with_execution_steps(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    workflow_id: str,
    outputs: list[AgentOutput],
) -> list[AgentOutput]:
    """Fill in the steps of answers without them from the runs' executions in n8n."""
    missing = {
        output.session_id
        for output in outputs
        if output.error is None and output.intermediate_steps is None
    }
    if not missing:
        return outputs
    # One execution per message sent: a run of several messages is several executions.
    sent = sum(max(len(output.turns or []) // 2, 1) for output in outputs)
    with n8n.client() as client:
        steps = steps_by_session(client.executions(workflow_id, limit=sent + 20))
    found = {session: steps[session] for session in missing if session in steps}
    context.log.info(f"steps read from executions for {len(found)}/{len(missing)} runs")
    return [
        output.model_copy(update={"intermediate_steps": found[output.session_id]})
        if output.intermediate_steps is None and output.session_id in found
        else output
        for output in outputs
    ]


def outputs_metadata(outputs: list[AgentOutput]) -> dict[str, Any]:
    """Figures of the agent_outputs table the UI charts."""
    latencies = [output.latency_s for output in outputs if output.latency_s is not None]
    return {
        "runs": len(outputs),
        "runs_without_output": sum(1 for output in outputs if output.error),
        "target_errors": sum(1 for output in outputs if output.error_kind == "target_error"),
        "mean_latency_s": fmean(latencies) if latencies else 0.0,
        **simulation_metadata(outputs),
    }
