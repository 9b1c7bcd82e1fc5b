"""``judge`` mocks: the judge writes each row's responses before the row's runs are called.

The judge is built in this process from the benchmark's judge spec, with its cache, pacing
and circuit breaker, and is imported only when a benchmark has such a mock (it brings
DeepEval). A row the judge wrote no response for is not called: its runs are error rows
that say why.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.harness_run import judge_mocked, with_judge_mocks
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.workflow.mocks import mock_request


def row_input(row: DatasetRow, target: WorkflowTarget) -> Any:
    """What the judge is told the row sends: its input, or its messages (never its answers)."""
    if row.input is None and target.messages_column:
        return row.raw.get(target.messages_column)
    return row.input


def judge_written_rows(
    context: dg.AssetExecutionContext,
    target: WorkflowTarget,
    workflow: dict[str, Any],
    rows: list[DatasetRow],
    spec: JudgeSpec,
    servers: dict[str, McpServer] | None = None,
) -> tuple[list[DatasetRow], dict[str, str]]:
    """The rows carrying the judge's responses, and the rows it failed for (id → why).

    ``servers``: what the MCP Client Tools' servers offer, by node (the judge writes an
    answer per tool for a mocked one).
    """
    names = judge_mocked(target)
    if not names:
        return rows, {}
    from n8n_deepeval_pipeline.judging.judge import PipelineJudge, UsageCounter
    from n8n_deepeval_pipeline.judging.mock_writer import write_mocks

    usage = UsageCounter()
    known = servers or {}
    requests = {name: mock_request(workflow, name, known.get(name)) for name in names}
    inputs = {row.row_id: row_input(row, target) for row in rows}
    written, failed = write_mocks(
        PipelineJudge(spec, usage), requests, inputs, target.max_concurrency
    )
    context.log.info(
        f"judge mocks ({', '.join(names)}) for {len(rows)} rows: {usage.calls} judge "
        f"calls, {usage.cached} answered from the cache, {len(failed)} rows without"
    )
    for row_id, error in failed.items():
        context.log.warning(f"row {row_id!r} is not run: {error}")
    return with_judge_mocks(rows, written), failed


def unmocked_runs(runs: list[ExpandedRun], failed: dict[str, str]) -> list[AgentOutput]:
    """The error rows of the runs whose row has no judge-written response."""
    return [
        AgentOutput(
            workflow_hash=run.workflow_hash,
            run_id=run.run_id,
            error=f"target_error: {failed[run.row_id]}",
            error_kind="target_error",
        )
        for run in runs
        if run.row_id in failed
    ]
