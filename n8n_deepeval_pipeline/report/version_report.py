"""The report of one stored version, compared with its baseline (CLI and asset alike)."""

from __future__ import annotations

from dataclasses import dataclass

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.report.build import Baseline, build_report
from n8n_deepeval_pipeline.report.cases import VersionRows
from n8n_deepeval_pipeline.report.model import Report
from n8n_deepeval_pipeline.summary.run_summary import incompleteness, summarise
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    of_version,
)


@dataclass(frozen=True)
class ReportOnlyTables:
    """The tables that only the report reads (the comparison needs none).

    ``outputs`` holds the candidate's and the baseline's, to set their runs side by side.
    """

    outputs: list[AgentOutput]
    consistency: list[ConsistencyStats]
    dataset: list[DatasetRow]


def version_report(
    benchmark: Benchmark,
    candidate: str,
    baseline: str | None,
    stored: StoredVersions,
    own: ReportOnlyTables,
) -> Report:
    """The candidate's report; ``stored`` holds its runs and the baseline's, if any.

    Versions may be named by key or hash; the report shows their full hashes. It calls
    the version incomplete as the error_rate check and ``run`` do, at checks.maxErrorRate.
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
    )
    why = incompleteness(summary.errors, None, benchmark.checks.max_error_rate)
    summary = summary.model_copy(update={"incomplete": why})
    against = None
    if baseline:
        baseline = stored.full_hash(baseline)
        against = Baseline(
            workflow_hash=baseline,
            rows=_rows(stored, own, baseline),
            comparison=stored.compare(baseline, candidate),
        )
    return build_report(
        summary, rows, fail_on=benchmark.compare.fail_on, baseline=against, dataset=own.dataset
    )


def _rows(stored: StoredVersions, own: ReportOnlyTables, version: str) -> VersionRows:
    return VersionRows(
        runs=of_version(stored.runs, version),
        outputs=of_version(own.outputs, version),
        scores=of_version(stored.scores, version),
        aggregates=of_version(stored.aggregates, version),
    )
