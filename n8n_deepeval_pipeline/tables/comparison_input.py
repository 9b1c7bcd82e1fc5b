"""A version's stored runs as the version comparison reads them: run outcomes by row id."""

from __future__ import annotations

from collections import defaultdict

from n8n_deepeval_pipeline.statistics.version_comparison import MetricRun, RunOutcome, VersionRuns
from n8n_deepeval_pipeline.tables.rows import ExpandedRun, MetricScore, RunAggregate


def version_runs(
    runs: list[ExpandedRun], aggregates: list[RunAggregate], scores: list[MetricScore]
) -> VersionRuns:
    """Each dataset row's runs (pass or fail under the pass rule, with their metrics).

    Cases are matched across versions by row id: case and run ids carry the hash.
    """
    row_of = {run.run_id: run.row_id for run in runs}
    metrics: dict[str, list[MetricRun]] = defaultdict(list)
    for score in scores:
        metrics[score.run_id].append(
            MetricRun(
                metric=score.metric,
                score=score.score,
                success=score.success,
                error_kind=score.error_kind,
            )
        )
    outcomes: dict[str, list[RunOutcome]] = defaultdict(list)
    for aggregate in sorted(aggregates, key=lambda row: row.run_id):
        outcome = RunOutcome(
            passed=aggregate.overall_success, metrics=tuple(metrics[aggregate.run_id])
        )
        outcomes[row_of[aggregate.run_id]].append(outcome)
    return dict(outcomes)
