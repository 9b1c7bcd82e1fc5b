"""A live run of the workflow for ``agent_outputs``: call it, and make sure of the version.

A webhook target is called as it is; a workflow target through a harness copy that runs
from its start node to its end node. Outputs are stored under the partition (the
workflow version) only if the workflow hashed to that version both before and after the
calls: an edit during the run, or a partition of an older version, is refused instead of
being labelled wrongly.
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
    harness_body,
    harness_problems,
    harness_webhook,
    mock_answers,
    remove_stale_copies,
    unmocked_services,
)
from n8n_deepeval_pipeline.n8n_api.workflow_usage import with_usage
from n8n_deepeval_pipeline.n8n_data.agent_steps import marked_mocked, tool_name
from n8n_deepeval_pipeline.orchestration.automation import CALLS_SHARED_BY
from n8n_deepeval_pipeline.orchestration.call_barrier import start_together
from n8n_deepeval_pipeline.orchestration.judged_mocks import judge_written_rows, unmocked_runs
from n8n_deepeval_pipeline.orchestration.progress import say_progress
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.summary.workflow_usage import workflow_usage
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.workflow.mocks import mocked_nodes
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


def live_outputs(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    n8n: N8nResource,
    judge: JudgeResource,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
) -> list[AgentOutput]:
    """Call the webhook for every run, between two checks of the workflow's version."""
    target = benchmark.target
    partition = context.partition_key
    workflow = workflow_at_version(benchmark, n8n, partition, "before")
    assert isinstance(target, WebhookTarget | WorkflowTarget)
    share = call_share(target, context.run.tags)
    if share != target.max_concurrency:
        context.log.info(f"calling with {share} of maxConcurrency {target.max_concurrency}")
        target = target.model_copy(update={"max_concurrency": share})
    prices = judge.prices().extended(target.prices)
    if isinstance(target, WorkflowTarget):
        rows, failed = judge_written_rows(
            context, target, workflow, rows, judge.spec_for(benchmark.judge)
        )
        called = [run for run in runs if run.row_id not in failed]
        outputs = (  # no copy is made when no row is left to call
            _through_harness(context, benchmark.name, target, workflow, n8n, called, rows, prices)
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
        outputs = _call(context, n8n, target, runs, rows)
        if isinstance(benchmark.workflow, N8nWorkflowRef):
            read = ExecutionReading(benchmark.workflow.id, workflow, prices)
            outputs = from_executions(context, n8n, read, outputs, target.steps_from_execution)
        else:
            context.log.info(
                "the workflow's own tokens are read from its executions in n8n: name it with "
                "workflow: {id: …} to have them measured"
            )
    workflow_at_version(benchmark, n8n, partition, "after")
    return outputs


def _call(
    context: dg.AssetExecutionContext,
    n8n: N8nResource,
    target: WebhookTarget,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
) -> list[AgentOutput]:
    caller = n8n.webhook_caller(target)
    tags = context.run.tags
    shared_by = int(tags.get(CALLS_SHARED_BY, "1") or 1)
    start_together(tags, context.partition_key, shared_by, context.log.info)
    context.log.info(f"calling {caller.identity} for {len(runs)} runs")
    step = max(1, len(runs) // 10)

    def progress(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            say_progress(context, f"called {done}/{total}")

    try:
        return caller.outputs(runs, {row.row_id: row for row in rows}, progress)
    finally:
        caller.close()


def _through_harness(
    context: dg.AssetExecutionContext,
    benchmark_name: str,
    target: WorkflowTarget,
    workflow: dict[str, Any],
    n8n: N8nResource,
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    prices: PriceTable,
) -> list[AgentOutput]:
    """Run the workflow (or a variant of it) from its start to its end node through a copy.

    The variants were checked against the workflow itself when the version was read.
    """
    problems = harness_problems(target, workflow, variants=False)
    if problems:
        raise ValueError("target: " + "; ".join(problems))
    for node in unmocked_services(target, workflow):
        context.log.warning(f"acts on a real service: {node}")
    answers = mock_answers(target, workflow)
    label = f"{benchmark_name} {context.partition_key}"
    # Every call may take its whole timeout, maxConcurrency at a time.
    time_limit_s = target.timeout_s * -(-len(runs) // target.max_concurrency)
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
            outputs = _call(context, n8n, webhook, runs, rows)
            read = ExecutionReading(copy_id, workflow, prices)
            outputs = from_executions(context, n8n, read, outputs, target.steps_from_execution)
    tools = {tool_name(name) for name in answers}
    return [
        output.model_copy(
            update={"intermediate_steps": marked_mocked(output.intermediate_steps, tools)}
        )
        for output in outputs
    ]


@dataclass(frozen=True)
class ExecutionReading:
    """Where a run's executions are, what ran there, and what its models cost.

    The workflow in n8n or the harness copy; the graph, whose model nodes name their
    models; the price table.
    """

    workflow_id: str
    workflow: dict[str, Any]
    prices: PriceTable


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
        "mean_latency_s": round(fmean(latencies), 4) if latencies else 0.0,
    }
    usage = workflow_usage(outputs)
    figures = {
        "latency_p50_s": usage.latency_p50_s,
        "latency_p95_s": usage.latency_p95_s,
        "llm/measured_runs": usage.measured_runs if usage.measured_runs else None,
        "llm/prompt_tokens": usage.prompt_tokens if usage.measured_runs else None,
        "llm/completion_tokens": usage.completion_tokens if usage.measured_runs else None,
        "llm/tokens_per_run": usage.tokens_per_run,
        "llm/cost_usd": usage.cost_usd,  # absent when unpriced: unpriced is not free
        "llm/cost_per_run_usd": usage.cost_per_run_usd,
    }
    metadata.update({name: value for name, value in figures.items() if value is not None})
    if usage.unpriced_models:
        metadata["llm/unpriced_models"] = ", ".join(usage.unpriced_models)
    return metadata
