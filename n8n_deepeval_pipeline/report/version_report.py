"""The report of one stored version, compared with its baseline (CLI and asset alike)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.measurement import Calibration
from n8n_deepeval_pipeline.report.build import Baseline, build_report
from n8n_deepeval_pipeline.report.cases import VersionRows
from n8n_deepeval_pipeline.report.model import Report, ReportImage
from n8n_deepeval_pipeline.report.red_team import RedTeamRows
from n8n_deepeval_pipeline.summary.outcome import Limits
from n8n_deepeval_pipeline.summary.run_summary import summarise
from n8n_deepeval_pipeline.summary.variant_matrix import VariantMatrix, variant_matrix
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.output_images import image_data
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    OutputImage,
    WorkflowCheck,
    WorkflowSnapshot,
    of_version,
)
from n8n_deepeval_pipeline.workflow.hashing import version_key
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
    checks: list[WorkflowCheck] = field(default_factory=list)
    """The candidate's workflow checks."""
    images: list[OutputImage] = field(default_factory=list)
    """The versions' images (``output_images``): those the runs shown show."""


def version_report(
    benchmark: Benchmark,
    candidate: str,
    baseline: str | None,
    stored: StoredVersions,
    own: ReportOnlyTables,
    red_team: RedTeamRows | None = None,
    limits: Limits | None = None,
    calibration: Calibration | None = None,
) -> Report:
    """The candidate's report; ``stored`` holds its runs and the baseline's, if any.

    Versions may be named by key or hash; the report shows their full hashes. Its outcome
    holds the version to ``limits`` (default: the benchmark's checks.maxErrorRate), as
    ``run`` and the version_passes check do; ``red_team``: its attacks, when played;
    ``calibration``: the judges' agreement with people's labels, for its section (and,
    with a calibration section, each metric's standing). When the candidate is a workflow
    with variants, or one of them, and ``stored`` and ``own`` hold the family's rows, the
    report sets them side by side.
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
        calibration.standings if calibration is not None and calibration.configured else (),
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
    report = build_report(
        summary,
        rows,
        fail_on=benchmark.compare.fail_on,
        limits=limits or Limits.of(benchmark.checks.max_error_rate),
        baseline=against,
        dataset=own.dataset,
        variants=family_matrix(
            benchmark.name,
            benchmark.metric_labels,
            benchmark.head_to_head,
            candidate,
            stored,
            own.outputs,
            own.snapshots,
        ),
        red_team=red_team,
        calibration=calibration,
    )
    shown = {r.run_id for case in report.cases for r in (*case.runs, *case.baseline_runs)}
    return report.model_copy(
        update={
            "images": _shown_images(own, shown),
            "ran_at": snapshot.fetched_at if snapshot else None,
            "written_at": datetime.now(UTC),
            "workflow_checks": tuple(of_version(own.checks, candidate)),
            "workspace_url": settings.workspace_url(
                "benchmarks", benchmark.name, "versions", version_key(candidate)
            ),
            "review_url": settings.workspace_url("benchmarks", benchmark.name, "review"),
        }
    )


def _shown_images(own: ReportOnlyTables, runs: set[str]) -> dict[str, ReportImage]:
    """The images of the runs the report shows, each once: a file beside the page or a link."""
    named = {
        image["sha256"]
        for output in own.outputs
        if output.run_id in runs
        for image in output.images or []
    }
    return {
        image.sha256: ReportImage(
            src=image.url or f"images/{image.sha256}{image_data(image).extension}",
            remote=image.url is not None,
            data_base64=image.data_base64,
        )
        for image in own.images
        if image.sha256 in named
    }


def family_matrix(
    name: str,
    metrics: Sequence[str],
    head_to_head: Mapping[str, str],
    candidate: str,
    stored: StoredVersions,
    outputs: Sequence[AgentOutput],
    snapshots: Sequence[WorkflowSnapshot],
) -> VariantMatrix | None:
    """The matrix of the candidate's family: its scored versions, the workflow first.

    ``stored``, ``outputs`` and ``snapshots`` hold the family's rows (others are ignored);
    None when the candidate has no variant scored (or is not a variant of a scored one).
    """
    by_hash = {snapshot.workflow_hash: snapshot for snapshot in snapshots}
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
    return variant_matrix(name, named, stored, outputs, metrics, head_to_head)


def _rows(stored: StoredVersions, own: ReportOnlyTables, version: str) -> VersionRows:
    return VersionRows(
        runs=of_version(stored.runs, version),
        outputs=of_version(own.outputs, version),
        scores=of_version(stored.scores, version),
        aggregates=of_version(stored.aggregates, version),
    )
