"""A workflow and its variants side by side: what `compare --variants` prints, the report shows.

One row per version of the family (the workflow itself, ``base``, then each variant): its
run pass rate with the Wilson 95% interval, each metric's mean score and pass rate (a
head-to-head metric's pass rate is the version's win rate against its opponent, with its
interval), the workflow's own tokens and cost per run, and its latency p50/p95; each
variant's cases compared with the base's by the compare tiers (Fisher's exact test); and
the frontier, the versions no other beats on both cost per run and pass rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from n8n_deepeval_pipeline.statistics.aggregate import mean_of_present
from n8n_deepeval_pipeline.statistics.frontier import frontier
from n8n_deepeval_pipeline.statistics.version_comparison import (
    CaseComparison,
    Interval,
    OverallPassRate,
    RunOutcome,
    Verdict,
    overall_pass_rate,
    wilson_interval,
)
from n8n_deepeval_pipeline.summary.workflow_usage import workflow_usage
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.rows import AgentOutput, MetricScore, of_version


class MetricCell(BaseModel):
    """One metric of one version."""

    metric: str
    results: int
    mean_score: float | None
    pass_rate: float | None
    against: str | None = None  # a head-to-head metric's opponent
    wins: int | None = None  # its pass count: runs this version won
    interval: Interval | None = None  # the win rate's Wilson 95% interval


class MatrixRow(BaseModel):
    """One version of the family."""

    name: str  # base, or the variant's name
    workflow_hash: str
    pass_rate: OverallPassRate
    metrics: list[MetricCell]
    measured_runs: int
    tokens_per_run: float | None
    cost_per_run_usd: float | None
    unpriced_models: list[str]
    tokens_estimated: bool
    latency_p50_s: float | None
    latency_p95_s: float | None
    frontier: bool
    cases: list[CaseComparison] | None  # against the base, case by case (None: the base)
    verdict_counts: dict[Verdict, int] | None


class VariantMatrix(BaseModel):
    """The family's matrix."""

    benchmark: str
    base_hash: str
    metrics: list[str]
    rows: list[MatrixRow]

    @property
    def priced(self) -> bool:
        """Whether some version has a cost per run: else there is no frontier to draw."""
        return any(row.cost_per_run_usd is not None for row in self.rows)

    def row(self, name: str) -> MatrixRow:
        """The row of a version by its name."""
        return next(row for row in self.rows if row.name == name)


def _cell(metric: str, scores: Sequence[MetricScore], against: str | None) -> MetricCell:
    own = [score for score in scores if score.metric == metric]
    # As in the run aggregate, an errored result counts as failed.
    passed = sum(1 for score in own if score.success and score.error_kind is None)
    judged = [score for score in own if score.error_kind is None] if against else own
    cell = MetricCell(
        metric=metric,
        results=len(own),
        mean_score=mean_of_present([score.score for score in own]),
        pass_rate=passed / len(own) if own else None,
        against=against,
    )
    if against is None or not own:
        return cell
    # A win rate over the games played: a run whose opponent had no output played none.
    wins = sum(1 for score in judged if score.success)
    return cell.model_copy(
        update={
            "wins": wins,
            "results": len(judged),
            "pass_rate": wins / len(judged) if judged else None,
            "interval": wilson_interval(wins, len(judged)),
        }
    )


def variant_matrix(
    benchmark: str,
    members: Sequence[tuple[str, str]],
    stored: StoredVersions,
    outputs: Sequence[AgentOutput],
    metrics: Sequence[str],
    head_to_head: Mapping[str, str],
) -> VariantMatrix:
    """The matrix of ``members`` ((name, full hash), the base first).

    ``stored`` and ``outputs`` hold their rows (others are ignored); ``head_to_head``:
    each head-to-head metric's label → its opponent's name.
    """
    _, base_hash = members[0]
    rows = []
    for name, digest in members:
        scores = of_version(stored.scores, digest)
        aggregates = of_version(stored.aggregates, digest)
        usage = workflow_usage(of_version(outputs, digest))
        comparison = None if digest == base_hash else stored.compare(base_hash, digest)
        rows.append(
            MatrixRow(
                name=name,
                workflow_hash=digest,
                pass_rate=overall_pass_rate(
                    [RunOutcome(passed=row.overall_success) for row in aggregates]
                ),
                # The opponent of a head-to-head metric has no results of it: an empty cell.
                metrics=[_cell(metric, scores, head_to_head.get(metric)) for metric in metrics],
                measured_runs=usage.measured_runs,
                tokens_per_run=usage.tokens_per_run,
                cost_per_run_usd=usage.cost_per_run_usd,
                unpriced_models=usage.unpriced_models,
                tokens_estimated=usage.estimated,
                latency_p50_s=usage.latency_p50_s,
                latency_p95_s=usage.latency_p95_s,
                frontier=False,
                cases=None if comparison is None else list(comparison.cases),
                verdict_counts=None if comparison is None else comparison.verdict_counts,
            )
        )
    on_frontier = set(frontier({r.name: (r.cost_per_run_usd, r.pass_rate.rate) for r in rows}))
    rows = [row.model_copy(update={"frontier": row.name in on_frontier}) for row in rows]
    return VariantMatrix(benchmark=benchmark, base_hash=base_hash, metrics=list(metrics), rows=rows)
