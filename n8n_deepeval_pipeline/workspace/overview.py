"""The home page's data: every benchmark with its latest version, its gate and failed checks."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.tables.rows import WorkflowCheck
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles, BenchmarkSettings
from n8n_deepeval_pipeline.workspace.calibration_gate import not_deciding
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, stored_tables
from n8n_deepeval_pipeline.workspace.verdict import VersionVerdict, version_verdicts
from n8n_deepeval_pipeline.workspace.versions import (
    StoredVersion,
    baselines,
    scored_versions,
)

# A schema is a benchmark's when its runs were aggregated (the IO managers' table names).
_SCORED = "run_aggregates"


class BenchmarkOverview(BaseModel):
    """One benchmark on the home page."""

    model_config = ConfigDict(frozen=True)

    settings: BenchmarkSettings
    versions: int  # scored versions, variants included
    latest: StoredVersion | None  # the workflow's latest run (None: never run)
    verdict: VersionVerdict | None  # the latest version against its baseline
    failed_checks: tuple[WorkflowCheck, ...]  # the latest version's workflow checks that failed

    @property
    def name(self) -> str:
        """The benchmark's name (its schema)."""
        return self.settings.name


def benchmark_names(reader: Reader) -> list[str]:
    """The benchmarks the store holds results of, by name."""
    return sorted(schema for schema, tables in stored_tables(reader).items() if _SCORED in tables)


def latest_version(versions: list[StoredVersion]) -> StoredVersion | None:
    """The workflow's latest run: the last version in run order that is not a variant."""
    own = [version for version in versions if version.variant is None] or versions
    return own[-1] if own else None


def benchmark_overview(
    reader: Reader, settings: BenchmarkSettings, benchmark: Benchmark | None = None
) -> BenchmarkOverview:
    """A stored benchmark's latest version, its verdict and its failed workflow checks.

    ``benchmark``: its file loaded, whose calibration gate the verdict keeps (None: none).
    """
    versions = scored_versions(reader, settings.name)
    latest = latest_version(versions)
    if latest is None:
        return BenchmarkOverview(
            settings=settings, versions=0, latest=None, verdict=None, failed_checks=()
        )
    baseline = baselines(reader, settings.name, versions, settings)[latest.key]
    gated = not_deciding(reader, benchmark)
    verdict = version_verdicts(
        reader, settings.name, settings, versions, {latest.key: baseline}, gated
    )
    checks = model_rows(
        reader,
        WorkflowCheck,
        settings.name,
        "workflow_hash = ? and status = 'fail'",
        [latest.workflow_hash],
    )
    return BenchmarkOverview(
        settings=settings,
        versions=len(versions),
        latest=latest,
        verdict=verdict[latest.key],
        failed_checks=tuple(checks),
    )


def overview(reader: Reader, files: BenchmarkFiles) -> tuple[list[BenchmarkOverview], list[str]]:
    """Every benchmark stored or found as a file, by name; the files that do not load."""
    found, problems = files.found()
    stored = benchmark_names(reader)
    shown = []
    for name in sorted(set(stored) | found.keys()):
        settings = found.get(name) or BenchmarkSettings(name=name, file=None)
        if name in stored:
            shown.append(benchmark_overview(reader, settings, files.benchmark(name)))
        else:
            shown.append(
                BenchmarkOverview(
                    settings=settings, versions=0, latest=None, verdict=None, failed_checks=()
                )
            )
    return shown, problems
