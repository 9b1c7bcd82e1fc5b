"""The report of one workflow version, from its stored tables and its comparison."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from n8n_deepeval_pipeline.calibration.measurement import Calibration
from n8n_deepeval_pipeline.report.cases import VersionRows, case_details
from n8n_deepeval_pipeline.report.model import ComparisonReport, Headline, MetricRow, Report
from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.statistics.version_comparison import (
    RunOutcome,
    VersionComparison,
    overall_pass_rate,
)
from n8n_deepeval_pipeline.summary.gate import comparison_gate
from n8n_deepeval_pipeline.summary.run_summary import BenchmarkSummary, MetricSummary
from n8n_deepeval_pipeline.summary.variant_matrix import VariantMatrix
from n8n_deepeval_pipeline.tables.rows import DatasetRow, MetricScore

SCORE_BINS = 10


@dataclass(frozen=True)
class Baseline:
    """The version the report's version is compared with: its rows and the comparison."""

    workflow_hash: str
    rows: VersionRows
    comparison: VersionComparison


def _errors_failing_no_run(rows: VersionRows) -> dict[str, int]:
    """Errored results by kind that failed no run, as run_failure_categories skips them."""
    deciding = {
        aggregate.run_id: {str(outcome["metric"]) for outcome in aggregate.metrics}
        for aggregate in rows.aggregates
        if not aggregate.overall_success
    }
    return dict(
        Counter(
            str(score.error_kind)
            for score in rows.scores
            if score.error_kind and score.metric not in deciding.get(score.run_id, set())
        ).most_common()
    )


def _headline(summary: BenchmarkSummary, rows: VersionRows) -> Headline:
    consistency, errors = summary.consistency, summary.errors
    outcomes = [RunOutcome(passed=aggregate.overall_success) for aggregate in rows.aggregates]
    return Headline(
        pass_rate=overall_pass_rate(outcomes),
        pass_rule=summary.pass_rule,
        mean_overall_score=summary.mean_overall_score,
        cases=consistency.cases,
        pass_at_k=consistency.mean_pass_at_k,
        pass_hat_k=consistency.mean_pass_hat_k,
        mean_consistency=consistency.mean_overall_consistency,
        mean_cv=consistency.mean_cv,
        label_agreement=consistency.mean_label_agreement,
        judge_label=summary.judge_label,
        dry_run_judge=summary.dry_run_judge,
        judge_calls=summary.judge_calls,
        cached_calls=summary.cached_calls,
        judge_retries=summary.judge_retries,
        tokens=summary.tokens,
        cost_usd=summary.cost_usd,
        scores=errors.scores,
        score_errors=sum(errors.by_kind.values()),
        errors_by_kind=errors.by_kind,
        errors_failing_no_run=_errors_failing_no_run(rows),
        unjudged_scores=errors.unjudged,
        output_errors=sum(1 for output in rows.outputs if output.error_kind),
        workflow=summary.workflow,
    )


def score_bins(scores: Sequence[float]) -> tuple[int, ...]:
    """How many scores fall in each tenth of [0, 1]; 1.0 is in the last tenth."""
    counts = [0] * SCORE_BINS
    for score in scores:
        # Metric scores lie in [0, 1]; clamping keeps a stray value visible at the edge.
        counts[min(max(int(score * SCORE_BINS), 0), SCORE_BINS - 1)] += 1
    return tuple(counts)


def _metric_row(metric: MetricSummary, scores: Sequence[MetricScore]) -> MetricRow:
    present = [score.score for score in scores if score.score is not None]
    return MetricRow(
        metric=metric.metric,
        direction=scores[0].direction,
        threshold=scores[0].threshold,
        mean_score=metric.mean_score,
        pass_rate=metric.pass_rate,
        errors=metric.errors,
        dry_run=metric.dry_run,
        score_bins=score_bins(present),
        unscored=len(scores) - len(present),
        decides=metric.decides,
        calibration=metric.calibration,
    )


def _metric_rows(summary: BenchmarkSummary, scores: Sequence[MetricScore]) -> tuple[MetricRow, ...]:
    by_metric: dict[str, list[MetricScore]] = defaultdict(list)
    for score in scores:
        by_metric[score.metric].append(score)
    return tuple(_metric_row(metric, by_metric[metric.metric]) for metric in summary.metrics)


def build_report(
    summary: BenchmarkSummary,
    candidate: VersionRows,
    *,
    fail_on: GateVerdict,
    baseline: Baseline | None = None,
    dataset: Sequence[DatasetRow] = (),
    variants: VariantMatrix | None = None,
    calibration: Calibration | None = None,
) -> Report:
    """The report of the version ``summary`` describes, from that version's rows.

    ``fail_on``: the benchmark's compare.failOn; ``baseline``: the version it is compared
    with (this one is the candidate); ``dataset`` adds each case's input and expected
    output to the drill-down; ``variants``: the matrix of the workflow and its variants,
    this version among them; ``calibration``: the judges' agreement with people. Whether
    the version is incomplete is the summary's word.
    """
    comparison = baseline.comparison if baseline else None
    verdicts = {case.row_id: case.verdict for case in comparison.cases} if comparison else {}
    return Report(
        benchmark=summary.benchmark,
        workflow_hash=summary.workflow_hash,
        headline=_headline(summary, candidate),
        gate=comparison_gate(
            fail_on, baseline.workflow_hash if baseline else None, comparison, summary.incomplete
        ),
        metrics=_metric_rows(summary, candidate.scores),
        comparison=ComparisonReport(
            baseline_hash=baseline.workflow_hash,
            result=baseline.comparison,
            fail_on=fail_on,
        )
        if baseline
        else None,
        cases=case_details(
            candidate,
            baseline.rows if baseline else None,
            dataset,
            verdicts,
            [metric.metric for metric in summary.metrics],
        ),
        variant=summary.variant,
        variants=variants,
        calibration=calibration,
    )
