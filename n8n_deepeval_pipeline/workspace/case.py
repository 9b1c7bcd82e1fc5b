"""One case of a version: its dataset row and every run, whole, beside the baseline's runs.

A run shows its output, every tool call (arguments, answer, and whether a mock answered
it), the conversation turn by turn for a simulated or multi-turn run, and each metric's
score, threshold, reason and judge spend. Outputs are shown whole: the report cuts them
to an excerpt, the workspace is where they are read.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    StepsShapeError,
    parse_intermediate_steps,
    tool_calls,
)
from n8n_deepeval_pipeline.report.conversation import (
    Conversation,
    ToolCallShown,
    conversation_of,
    tool_shown,
)
from n8n_deepeval_pipeline.statistics.version_comparison import (
    FailureCategory,
    run_failure_categories,
)
from n8n_deepeval_pipeline.tables.comparison import run_outcome
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
)
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, placeholders
from n8n_deepeval_pipeline.workspace.versions import StoredVersion

WHOLE = sys.maxsize  # the workspace shows texts whole: the report cuts them to an excerpt


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class RunShown(_Frozen):
    """One run of the case, with everything stored about it."""

    run: ExpandedRun
    aggregate: RunAggregate | None  # None: not aggregated (the run was not scored)
    output: AgentOutput | None
    tool_calls: tuple[ToolCallShown, ...]
    conversation: Conversation | None  # its turns, for a simulated or multi-turn run
    unreadable: str | None  # why the stored steps or turns could not be read
    scores: tuple[MetricScore, ...]  # in the benchmark file's order
    counted: frozenset[str]  # the metrics that decide the run under the pass rule
    failure_categories: tuple[FailureCategory, ...]

    @property
    def passed(self) -> bool:
        """Whether the run passed its pass rule."""
        return self.aggregate is not None and self.aggregate.overall_success

    @property
    def judge_calls(self) -> int:
        """The judge's calls for the run's scores."""
        return sum(score.judge_calls for score in self.scores)

    @property
    def judge_tokens(self) -> int:
        """The judge's tokens for the run's scores."""
        return sum(score.tokens for score in self.scores)

    @property
    def judge_cost_usd(self) -> float | None:
        """What the judge cost for the run (None: no score priced)."""
        costs = [score.cost_usd for score in self.scores if score.cost_usd is not None]
        return sum(costs) if costs else None


class CaseShown(_Frozen):
    """A case of a version, and the same dataset row's runs in the baseline version."""

    row_id: str
    version: StoredVersion
    row: DatasetRow | None
    runs: tuple[RunShown, ...]
    baseline: StoredVersion | None
    baseline_runs: tuple[RunShown, ...]


def tool_calls_shown(steps: Any) -> tuple[ToolCallShown, ...]:
    """The agent's stored ``intermediateSteps`` as tool calls, whole, mocked ones marked."""
    parsed = parse_intermediate_steps(steps) or []
    return tuple(
        tool_shown({**call.model_dump(), "mocked": (step.model_extra or {}).get("mocked")}, WHOLE)
        for call, step in zip(tool_calls(parsed), parsed, strict=True)
    )


def _run_shown(
    run: ExpandedRun,
    aggregate: RunAggregate | None,
    output: AgentOutput | None,
    scores: list[MetricScore],
    metric_order: Sequence[str],
) -> RunShown:
    rank = {metric: index for index, metric in enumerate(metric_order)}
    ordered = sorted(scores, key=lambda score: (rank.get(score.metric, len(rank)), score.metric))
    calls: tuple[ToolCallShown, ...] = ()
    unreadable = None
    try:
        calls = tool_calls_shown(output.intermediate_steps) if output else ()
    except StepsShapeError as error:
        unreadable = str(error)
    counted = frozenset(str(m["metric"]) for m in aggregate.metrics) if aggregate else frozenset()
    categories = run_failure_categories(run_outcome(aggregate, ordered)) if aggregate else set()
    return RunShown(
        run=run,
        aggregate=aggregate,
        output=output,
        tool_calls=calls,
        conversation=conversation_of(output, WHOLE) if output else None,
        unreadable=unreadable,
        scores=tuple(ordered),
        counted=counted,
        failure_categories=tuple(sorted(categories)),
    )


def _runs(
    reader: Reader, schema: str, version: StoredVersion, row_id: str, metric_order: Sequence[str]
) -> tuple[RunShown, ...]:
    digest = version.workflow_hash
    runs = model_rows(
        reader, ExpandedRun, schema, "workflow_hash = ? and row_id = ?", [digest, row_id]
    )
    run_ids = [run.run_id for run in runs]
    if not run_ids:
        return ()
    where = f"workflow_hash = ? and run_id in ({placeholders(run_ids)})"
    parameters = [digest, *run_ids]
    aggregates = {a.run_id: a for a in model_rows(reader, RunAggregate, schema, where, parameters)}
    outputs = {o.run_id: o for o in model_rows(reader, AgentOutput, schema, where, parameters)}
    scores: dict[str, list[MetricScore]] = {}
    for score in model_rows(reader, MetricScore, schema, where, parameters):
        scores.setdefault(score.run_id, []).append(score)
    return tuple(
        _run_shown(
            run,
            aggregates.get(run.run_id),
            outputs.get(run.run_id),
            scores.get(run.run_id, []),
            metric_order,
        )
        for run in sorted(runs, key=lambda run: run.run_index)
    )


def case_shown(
    reader: Reader,
    schema: str,
    version: StoredVersion,
    row_id: str,
    baseline: StoredVersion | None,
    metric_order: Sequence[str],
) -> CaseShown | None:
    """The case ``row_id`` of ``version`` beside its runs in ``baseline``; None: no such case."""
    runs = _runs(reader, schema, version, row_id, metric_order)
    if not runs:
        return None
    rows = model_rows(
        reader,
        DatasetRow,
        schema,
        "workflow_hash = ? and row_id = ?",
        [version.workflow_hash, row_id],
    )
    return CaseShown(
        row_id=row_id,
        version=version,
        row=rows[0] if rows else None,
        runs=runs,
        baseline=baseline,
        baseline_runs=_runs(reader, schema, baseline, row_id, metric_order) if baseline else (),
    )
