"""The report of one stored version, compared with its baseline (CLI and asset alike)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from n8n_deepeval_pipeline.benchmark_config import Benchmark
from n8n_deepeval_pipeline.report.build import build_report
from n8n_deepeval_pipeline.report.model import Report
from n8n_deepeval_pipeline.summary import summarise
from n8n_deepeval_pipeline.tables.comparison import StoredVersions, baseline_version
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
    TableRow,
)

Row = TypeVar("Row", bound=TableRow)


@dataclass(frozen=True)
class StoredTables:
    """Rows of the stored tables; runs, aggregates and scores may hold several versions."""

    runs: list[ExpandedRun]
    aggregates: list[RunAggregate]
    scores: list[MetricScore]
    outputs: list[AgentOutput]
    consistency: list[ConsistencyStats]
    dataset: list[DatasetRow]

    def of(self, version: str) -> StoredTables:
        """Only one version's rows."""
        return StoredTables(
            runs=_of(self.runs, version),
            aggregates=_of(self.aggregates, version),
            scores=_of(self.scores, version),
            outputs=_of(self.outputs, version),
            consistency=_of(self.consistency, version),
            dataset=_of(self.dataset, version),
        )


def _of(rows: list[Row], version: str) -> list[Row]:
    return [row for row in rows if row.workflow_hash == version]


def version_report(
    benchmark: Benchmark, candidate: str, known: list[str], tables: StoredTables
) -> Report:
    """The candidate's report, compared with its baseline when it has one."""
    stored = StoredVersions(tables.runs, tables.aggregates, tables.scores)
    baseline = baseline_version(stored.versions(known), candidate, benchmark.compare.baseline)
    own = tables.of(candidate)
    summary = summarise(
        benchmark.name,
        candidate,
        own.scores,
        own.aggregates,
        own.consistency,
        benchmark.metric_labels,
    )
    return build_report(
        summary,
        own.runs,
        own.outputs,
        own.scores,
        own.aggregates,
        comparison=stored.compare(baseline, candidate) if baseline else None,
        baseline_hash=baseline,
        dataset=own.dataset,
    )
