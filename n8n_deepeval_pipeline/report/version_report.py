"""The report of one stored version, compared with its baseline (CLI and asset alike)."""

from __future__ import annotations

from dataclasses import dataclass

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.console.run_summary import summarise
from n8n_deepeval_pipeline.report.build import build_report
from n8n_deepeval_pipeline.report.model import Report
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    of_version,
)


@dataclass(frozen=True)
class ReportOnlyTables:
    """The candidate's tables that only the report reads (the comparison needs none)."""

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

    Versions may be named by key or hash; the report shows their full hashes.
    """
    candidate = stored.full_hash(candidate)
    baseline = stored.full_hash(baseline) if baseline else None
    runs = of_version(stored.runs, candidate)
    aggregates = of_version(stored.aggregates, candidate)
    scores = of_version(stored.scores, candidate)
    summary = summarise(
        benchmark.name, candidate, scores, aggregates, own.consistency, benchmark.metric_labels
    )
    return build_report(
        summary,
        runs,
        own.outputs,
        scores,
        aggregates,
        comparison=stored.compare(baseline, candidate) if baseline else None,
        baseline_hash=baseline,
        dataset=own.dataset,
    )
