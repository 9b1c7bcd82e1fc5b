"""The report of one workflow version, from its stored tables and its comparison."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from n8n_deepeval_pipeline.calibration.measurement import Calibration
from n8n_deepeval_pipeline.red_team.breach_rates import red_team_outcome
from n8n_deepeval_pipeline.report.cases import VersionRows, case_details
from n8n_deepeval_pipeline.report.model import ComparisonReport, Headline, MetricRow, Report
from n8n_deepeval_pipeline.report.red_team import RedTeamRows, red_team_report
from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.statistics.version_comparison import (
    RunOutcome,
    VersionComparison,
    overall_pass_rate,
)
from n8n_deepeval_pipeline.summary.gate import comparison_gate
from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome, version_outcome
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


def outcome_from_rows(
    summary: BenchmarkSummary,
    comparison: VersionComparison | None,
    baseline: str | None,
    fail_on: GateVerdict,
    red_team: RedTeamRows | None,
    limits: Limits,
) -> VersionOutcome:
    """The outcome of the version ``summary`` sums up, from its rows.

    ``comparison``: against ``baseline`` (None: it has none); ``red_team``: its attacks,
    when the benchmark has a red team and they were played. The report and the runner
    (``run``, ``compare``) both take a version's outcome from here.
    """
    gate = comparison_gate(fail_on, baseline, comparison)
    played = (
        red_team_outcome(red_team.rates, red_team.results, fail_on)
        if red_team is not None and red_team.results
        else None
    )
    return version_outcome(summary, gate, played, limits)


def build_report(
    summary: BenchmarkSummary,
    candidate: VersionRows,
    *,
    fail_on: GateVerdict,
    limits: Limits,
    baseline: Baseline | None = None,
    dataset: Sequence[DatasetRow] = (),
    variants: VariantMatrix | None = None,
    red_team: RedTeamRows | None = None,
    calibration: Calibration | None = None,
) -> Report:
    """The report of the version ``summary`` describes, from that version's rows.

    ``fail_on``: the benchmark's compare.failOn; ``limits``: what the version is held to
    (checks.maxErrorRate, or ``run``'s options); ``baseline``: the version it is compared
    with (this one is the candidate); ``dataset`` adds each case's input and expected
    output to the drill-down; ``variants``: the matrix of the workflow and its variants,
    this version among them; ``red_team``: its attacks, for the red-team section;
    ``calibration``: the judges' agreement with people.
    """
    comparison = baseline.comparison if baseline else None
    verdicts = {case.row_id: case.verdict for case in comparison.cases} if comparison else {}
    played = red_team if red_team is not None and red_team.results else None
    return Report(
        benchmark=summary.benchmark,
        workflow_hash=summary.workflow_hash,
        headline=_headline(summary, candidate),
        outcome=outcome_from_rows(
            summary,
            comparison,
            baseline.workflow_hash if baseline else None,
            fail_on,
            played,
            limits,
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
        red_team=red_team_report(played.rates, played.results, played.baseline_results, fail_on)
        if played is not None
        else None,
        variant=summary.variant,
        variants=variants,
        calibration=calibration,
    )
