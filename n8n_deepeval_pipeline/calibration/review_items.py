"""A run as a reviewer sees it: what was asked, what came back, and what to judge.

Everything the review page shows of one run: the input, the workflow's answer (or the
whole conversation of a simulated or multi-turn run), the tools the agent called, the
expected output and context, and each metric under review with the question it asks.
The judge's score, verdict and reason ride along in ``judge``; the review queue hands
them out only once the reviewer has labelled the run, so they cannot anchor the label.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.judged import RunKind
from n8n_deepeval_pipeline.calibration.sampler import Candidate, sample
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.options import CriteriaMetricConfig, MetricConfig
from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    StepsShapeError,
    parse_intermediate_steps,
    tool_calls,
)
from n8n_deepeval_pipeline.n8n_data.conversation import ConversationShapeError, parse_conversation
from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, MetricScore


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolCallShown(_Frozen):
    """One tool the agent called: its arguments and what it got back."""

    tool: str
    arguments: dict[str, Any]
    output: Any = None
    mocked: bool | None = None  # a red team's call the harness copy answered (it never ran)


class TurnShown(_Frozen):
    """One turn of a conversation, with the tools an assistant turn called."""

    role: str
    content: str
    tools: tuple[ToolCallShown, ...] = ()
    attack: str | None = None  # the attack a red team's turn carried


class AttackShown(_Frozen):
    """What a red team's attack aimed at, and how (the metric is its vulnerability)."""

    vulnerability: str
    vulnerability_type: str
    attack_method: str | None
    multi_turn: bool


class MetricToLabel(_Frozen):
    """A metric the reviewer labels: what it asks, and how it passes."""

    metric: str
    name: str  # the catalog's name (a G-Eval's own)
    question: str | None  # a G-Eval's criteria or evaluation steps, in words
    direction: Direction
    threshold: float


class JudgeVerdict(_Frozen):
    """What the judge made of the run on one metric (shown once the run is labelled)."""

    metric: str
    score: float | None
    threshold: float
    direction: Direction
    passed: bool
    reason: str | None
    judge: str | None
    panel_agreement: float | None = None  # a panel's share agreeing with its verdict


class ReviewItem(_Frozen):
    """One run in the review queue."""

    run_id: str
    case_id: str
    row_id: str
    run_index: int
    workflow_hash: str
    kind: RunKind = "benchmark"
    input: str | None
    output: str | None
    output_error: str | None = None
    conversation: tuple[TurnShown, ...] | None = None
    tool_calls: tuple[ToolCallShown, ...] = ()
    expected_output: str | None = None
    context: tuple[str, ...] | None = None
    retrieval_context: tuple[str, ...] | None = None
    attack: AttackShown | None = None  # a red team's attack
    metrics: tuple[MetricToLabel, ...]
    judge: tuple[JudgeVerdict, ...] = ()

    def withheld(self) -> ReviewItem:
        """The item without the judge's verdicts, as it is shown before it is labelled."""
        return self.model_copy(update={"judge": ()})


def _shown_calls(steps: Any) -> tuple[ToolCallShown, ...]:
    try:
        parsed = parse_intermediate_steps(steps)
    except StepsShapeError:
        return ()
    if parsed is None:
        return ()
    return tuple(
        ToolCallShown(tool=call.name, arguments=call.input_parameters, output=call.output)
        for call in tool_calls(parsed)
    )


def _conversation(turns: Any) -> tuple[TurnShown, ...] | None:
    try:
        parsed = parse_conversation(turns)
    except ConversationShapeError:
        return None
    if not parsed:
        return None
    return tuple(
        TurnShown(
            role=turn.role,
            content=turn.content,
            tools=tuple(
                ToolCallShown(tool=call.name, arguments=call.input_parameters, output=call.output)
                for call in turn.tools_called or []
            ),
        )
        for turn in parsed
    )


def _question(config: MetricConfig) -> str | None:
    if not isinstance(config, CriteriaMetricConfig):
        return None
    if config.criteria is not None:
        return config.criteria
    return "\n".join(f"{n}. {step}" for n, step in enumerate(config.evaluation_steps or [], 1))


def metric_to_label(benchmark: Benchmark, verdict: JudgeVerdict) -> MetricToLabel:
    """What the reviewer is asked about one metric of the run."""
    config = next((m for m in benchmark.metrics if m.result_label() == verdict.metric), None)
    name = verdict.metric
    if config is not None:
        name = getattr(config, "name", None) or entry_for(config).name
    return MetricToLabel(
        metric=verdict.metric,
        name=name,
        question=None if config is None else _question(config),
        direction=verdict.direction,
        threshold=verdict.threshold,
    )


class JudgedScore(Protocol):
    """A judge's score of one run and metric, as a version's and an online item's rows hold it."""

    @property
    def metric(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def threshold(self) -> float: ...
    @property
    def success(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def judge(self) -> str | None: ...
    @property
    def error_kind(self) -> str | None: ...
    @property
    def dry_run(self) -> bool: ...


def judge_verdict(
    score: JudgedScore, direction: Direction, panel_agreement: float | None = None
) -> JudgeVerdict:
    """The judge's side of one metric on the run."""
    return JudgeVerdict(
        metric=score.metric,
        score=score.score,
        threshold=score.threshold,
        direction=direction,
        passed=score.success,
        reason=score.reason,
        judge=score.judge,
        panel_agreement=panel_agreement,
    )


def candidate(
    run_id: str, score: JudgedScore, direction: Direction, panel_agreement: float | None = None
) -> Candidate | None:
    """The score as a pair a reviewer could label (None: errored, or a dry-run placeholder)."""
    if score.score is None or score.error_kind is not None or score.dry_run:
        return None
    return Candidate(
        run_id=run_id,
        metric=score.metric,
        score=score.score,
        threshold=score.threshold,
        direction=direction,
        judge_passed=score.success,
        judge_agreement=panel_agreement,
    )


def candidates(scores: Sequence[MetricScore], metrics: Collection[str]) -> list[Candidate]:
    """The scores of ``metrics`` a reviewer could label: judged, not a dry-run placeholder."""
    found = [
        candidate(score.run_id, score, score.direction, score.judge_agreement)
        for score in scores
        if score.metric in metrics
    ]
    return [pair for pair in found if pair is not None]


@dataclass(frozen=True)
class RunsToReview:
    """A version's stored rows a review reads: its runs, their outputs, rows and scores."""

    runs: Sequence[ExpandedRun]
    outputs: Sequence[AgentOutput]
    dataset: Sequence[DatasetRow]
    scores: Sequence[MetricScore]


def sampled_items(
    benchmark: Benchmark,
    rows: RunsToReview,
    metrics: Sequence[str],
    count: int,
    labelled: Collection[tuple[str, str]] = (),
    seed: int = 0,
) -> list[ReviewItem]:
    """A stratified, weighted sample of the version's judged pairs, as review items.

    ``metrics``: the metrics to review; ``labelled``: (run, metric) pairs the reviewer has
    labelled, never drawn again.
    """
    picked = sample(candidates(rows.scores, metrics), count, labelled, metrics, seed)
    verdicts = {
        (score.run_id, score.metric): judge_verdict(score, score.direction, score.judge_agreement)
        for score in rows.scores
    }
    return review_items(benchmark, picked, rows.runs, rows.outputs, rows.dataset, verdicts)


def review_items(
    benchmark: Benchmark,
    picked: Sequence[Candidate],
    runs: Sequence[ExpandedRun],
    outputs: Sequence[AgentOutput],
    dataset: Sequence[DatasetRow],
    verdicts: Mapping[tuple[str, str], JudgeVerdict],
    kind: RunKind = "benchmark",
) -> list[ReviewItem]:
    """The picked pairs as review items: one per run, its picked metrics, in picked order.

    ``verdicts``: the judge's verdict of each (run, metric).
    """
    run_of = {run.run_id: run for run in runs}
    output_of = {output.run_id: output for output in outputs}
    row_of = {row.row_id: row for row in dataset}
    metrics_of: dict[str, list[str]] = defaultdict(list)
    for candidate in picked:
        metrics_of[candidate.run_id].append(candidate.metric)
    items = []
    for run_id, metrics in metrics_of.items():
        run, output = run_of[run_id], output_of.get(run_id)
        row = row_of.get(run.row_id)
        chosen = [verdicts[(run_id, metric)] for metric in metrics]
        items.append(
            ReviewItem(
                run_id=run_id,
                case_id=run.case_id,
                row_id=run.row_id,
                run_index=run.run_index,
                workflow_hash=run.workflow_hash,
                kind=kind,
                input=None if row is None else row.input,
                output=None if output is None else output.actual_output,
                output_error=None if output is None else output.error,
                conversation=None if output is None else _conversation(output.turns),
                tool_calls=() if output is None else _shown_calls(output.intermediate_steps),
                expected_output=None if row is None else row.expected_output,
                context=None if row is None or row.context is None else tuple(row.context),
                retrieval_context=(
                    None
                    if row is None or row.retrieval_context is None
                    else tuple(row.retrieval_context)
                ),
                metrics=tuple(metric_to_label(benchmark, verdict) for verdict in chosen),
                judge=tuple(chosen),
            )
        )
    return items
