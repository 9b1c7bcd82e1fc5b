"""The per-case drill-down: every run's output, why it failed and each metric's result.

Against a baseline, each case carries the baseline's runs too, for the page to set them
beside the candidate's, and what made the case drop. A run that holds turns carries its
conversation whole (``report.conversation``); a simulated conversation's case, the
scenario its row gives in place of an input.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from n8n_deepeval_pipeline.report.causes import drop_causes
from n8n_deepeval_pipeline.report.conversation import conversation_of
from n8n_deepeval_pipeline.report.excerpt import Excerpt
from n8n_deepeval_pipeline.report.model import CaseDetail, MetricResult, RunDetail
from n8n_deepeval_pipeline.report.verdicts import attention_order
from n8n_deepeval_pipeline.statistics.version_comparison import (
    Verdict,
    pass_count,
    run_failure_categories,
)
from n8n_deepeval_pipeline.tables.comparison import run_outcome
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
    scores_by_run,
)

# Enough of an answer to judge it in the page; eval-results.json stays small enough to diff.
OUTPUT_LIMIT = 1500
FIELD_LIMIT = 600  # inputs, expected outputs, reasons and errors


@dataclass(frozen=True)
class VersionRows:
    """One version's stored rows that the drill-down reads."""

    runs: list[ExpandedRun]
    outputs: list[AgentOutput]
    scores: list[MetricScore]
    aggregates: list[RunAggregate]


def _excerpt(text: str | None, limit: int = FIELD_LIMIT) -> Excerpt | None:
    return None if text is None else Excerpt.of(text, limit)


def _error(text: str | None, kind: str | None) -> Excerpt | None:
    """An error's text without the kind it may start with: the page names the kind once."""
    if text is not None and kind is not None and text.startswith(f"{kind}: "):
        text = text[len(kind) + 2 :]
    return _excerpt(text)


def _metric_result(score: MetricScore, counted: bool) -> MetricResult:
    return MetricResult(
        metric=score.metric,
        score=score.score,
        threshold=score.threshold,
        direction=score.direction,
        success=score.success,
        reason=_excerpt(score.reason),
        error=_error(score.error, score.error_kind),
        error_kind=score.error_kind,
        dry_run=score.dry_run,
        counted=counted,
    )


def _run_detail(
    run: ExpandedRun,
    aggregate: RunAggregate,
    output: AgentOutput | None,
    scores: Sequence[MetricScore],
    metric_rank: Mapping[str, int],
) -> RunDetail:
    ordered = sorted(scores, key=lambda score: metric_rank.get(score.metric, len(metric_rank)))
    outcome = run_outcome(aggregate, list(ordered))
    categories = run_failure_categories(outcome)
    return RunDetail(
        run_id=run.run_id,
        run_index=run.run_index,
        passed=aggregate.overall_success,
        overall_score=aggregate.overall_score,
        output=_excerpt(output.actual_output, OUTPUT_LIMIT) if output else None,
        output_error=_error(output.error, output.error_kind) if output else None,
        latency_s=output.latency_s if output else None,
        failure_categories=tuple(sorted(categories)),
        metrics=tuple(
            _metric_result(score, result.counted)
            for score, result in zip(ordered, outcome.metrics, strict=True)
        ),
        conversation=conversation_of(output) if output else None,
        input_images=tuple(
            image["sha256"]
            for image in (output.images or [] if output else [])
            if image.get("role") == "input"
        ),
    )


def _case(
    row_id: str,
    runs: list[RunDetail],
    baseline: list[RunDetail],
    row: DatasetRow | None,
    verdict: Verdict | None,
) -> CaseDetail:
    runs = sorted(runs, key=lambda detail: detail.run_index)
    baseline = sorted(baseline, key=lambda detail: detail.run_index)
    return CaseDetail(
        row_id=row_id,
        input=_excerpt(row.input) if row else None,
        expected_output=_excerpt(row.expected_output) if row else None,
        scenario=_excerpt(row.scenario) if row else None,
        expected_outcome=_excerpt(row.expected_outcome) if row else None,
        user_description=_excerpt(row.user_description) if row else None,
        verdict=verdict,
        passed=sum(detail.passed for detail in runs),
        runs=tuple(runs),
        baseline_passed=sum(detail.passed for detail in baseline),
        baseline_runs=tuple(baseline),
        causes=drop_causes(baseline, runs),
    )


def _attention_order(case: CaseDetail) -> tuple[int, float, str]:
    passes = pass_count([run.passed for run in case.runs])
    return attention_order(case.verdict, passes, case.row_id)


def _runs_by_row(rows: VersionRows, metric_rank: Mapping[str, int]) -> dict[str, list[RunDetail]]:
    run_of = {run.run_id: run for run in rows.runs}
    output_of = {output.run_id: output for output in rows.outputs}
    scores_of = scores_by_run(rows.scores)
    by_row: dict[str, list[RunDetail]] = defaultdict(list)
    for aggregate in rows.aggregates:
        run = run_of[aggregate.run_id]
        by_row[run.row_id].append(
            _run_detail(
                run, aggregate, output_of.get(run.run_id), scores_of[run.run_id], metric_rank
            )
        )
    return by_row


def case_details(
    candidate: VersionRows,
    baseline: VersionRows | None,
    dataset: Sequence[DatasetRow],
    verdicts: Mapping[str, Verdict],
    metric_order: Sequence[str],
) -> tuple[CaseDetail, ...]:
    """Every scored run of the candidate, by dataset row, the rows that need attention first.

    A case the baseline has too carries the baseline's runs. Metrics appear in
    ``metric_order`` (the benchmark file's), any others after them.
    """
    metric_rank = {metric: rank for rank, metric in enumerate(metric_order)}
    by_row = _runs_by_row(candidate, metric_rank)
    baseline_by_row = _runs_by_row(baseline, metric_rank) if baseline else {}
    row_of = {row.row_id: row for row in dataset}
    cases = [
        _case(
            row_id,
            details,
            baseline_by_row.get(row_id, []),
            row_of.get(row_id),
            verdicts.get(row_id),
        )
        for row_id, details in by_row.items()
    ]
    return tuple(sorted(cases, key=_attention_order))
