"""The report of one stored version, compared with its baseline (CLI and asset alike)."""

from __future__ import annotations

from dataclasses import dataclass, field

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.report.build import Baseline, build_report
from n8n_deepeval_pipeline.report.cases import VersionRows
from n8n_deepeval_pipeline.report.model import Report
from n8n_deepeval_pipeline.report.red_team import RedTeamRows
from n8n_deepeval_pipeline.summary.outcome import Limits
from n8n_deepeval_pipeline.summary.run_summary import summarise
from n8n_deepeval_pipeline.summary.variant_matrix import VariantMatrix, variant_matrix
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    WorkflowSnapshot,
    of_version,
)
from n8n_deepeval_pipeline.workflow.variants import BASE


@dataclass(frozen=True)
class ReportOnlyTables:
    """The tables that only the report reads (the comparison needs none).

    ``outputs`` holds the candidate's and the baseline's, to set their runs side by side.
    """

    outputs: list[AgentOutput]
    consistency: list[ConsistencyStats]
    dataset: list[DatasetRow]
    snapshots: list[WorkflowSnapshot] = field(default_factory=list)
    """The versions' snapshots: which are variants, and of which workflow."""


def version_report(
    benchmark: Benchmark,
    candidate: str,
    baseline: str | None,
    stored: StoredVersions,
    own: ReportOnlyTables,
    red_team: RedTeamRows | None = None,
    limits: Limits | None = None,
) -> Report:
    """The candidate's report; ``stored`` holds its runs and the baseline's, if any.

    Versions may be named by key or hash; the report shows their full hashes. Its outcome
    holds the version to ``limits`` (default: the benchmark's checks.maxErrorRate), as
    ``run`` and the version_passes check do; ``red_team``: its attacks, when played. When
    the candidate is a workflow with variants, or one of them, and ``stored`` and ``own``
    hold the family's rows, the report sets them side by side.
    """
    candidate = stored.full_hash(candidate)
    rows = _rows(stored, own, candidate)
    summary = summarise(
        benchmark.name,
        candidate,
        rows.scores,
        rows.aggregates,
        own.consistency,
        benchmark.metric_labels,
        rows.outputs,
    )
    against = None
    if baseline:
        baseline = stored.full_hash(baseline)
        against = Baseline(
            workflow_hash=baseline,
            rows=_rows(stored, own, baseline),
            comparison=stored.compare(baseline, candidate),
        )
    snapshot = next((s for s in own.snapshots if s.workflow_hash == candidate), None)
    summary = summary.model_copy(update={"variant": snapshot.variant if snapshot else None})
    return build_report(
        summary,
        rows,
        fail_on=benchmark.compare.fail_on,
        limits=limits or Limits.of(benchmark.checks.max_error_rate),
        baseline=against,
        dataset=own.dataset,
        variants=_family_matrix(benchmark, candidate, stored, own),
        red_team=red_team,
    )


def _family_matrix(
    benchmark: Benchmark, candidate: str, stored: StoredVersions, own: ReportOnlyTables
) -> VariantMatrix | None:
    """The matrix of the candidate's family: its scored versions, the workflow first."""
    by_hash = {snapshot.workflow_hash: snapshot for snapshot in own.snapshots}
    mine = by_hash.get(candidate)
    if mine is None:
        return None
    base = mine.base_hash or mine.workflow_hash
    scored = {aggregate.workflow_hash for aggregate in stored.aggregates}
    # By name, the latest (a variant defined otherwise since is the same name), base first.
    latest = {
        (s.variant or BASE): s
        for s in sorted(by_hash.values(), key=lambda s: s.fetched_at)
        if s.workflow_hash in scored and (s.workflow_hash == base or s.base_hash == base)
    }
    members = sorted(latest.values(), key=lambda s: (s.base_hash is not None, s.fetched_at))
    named = [(s.variant or BASE, s.workflow_hash) for s in members]
    if len(named) < 2 or named[0][1] != base:
        return None
    return variant_matrix(
        benchmark.name,
        named,
        stored,
        own.outputs,
        benchmark.metric_labels,
        benchmark.head_to_head,
    )


def _rows(stored: StoredVersions, own: ReportOnlyTables, version: str) -> VersionRows:
    return VersionRows(
        runs=of_version(stored.runs, version),
        outputs=of_version(own.outputs, version),
        scores=of_version(stored.scores, version),
        aggregates=of_version(stored.aggregates, version),
    )
