"""A workflow and its variants side by side: the report's matrix, of any scored family."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from n8n_deepeval_pipeline.report.version_report import family_matrix
from n8n_deepeval_pipeline.summary.variant_matrix import VariantMatrix
from n8n_deepeval_pipeline.tables.rows import AgentOutput, WorkflowSnapshot
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkSettings
from n8n_deepeval_pipeline.workspace.side_by_side import stored_versions
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, placeholders
from n8n_deepeval_pipeline.workspace.versions import StoredVersion

# The matrix reads the workflow's own usage and latency of each output, none of its texts.
_OUTPUT_TEXTS = ("actual_output", "intermediate_steps", "turns", "simulation", "error")


def families(versions: Sequence[StoredVersion]) -> list[StoredVersion]:
    """The workflow versions that have a variant scored, oldest run first."""
    bases = {version.base_hash for version in versions if version.base_hash}
    return [version for version in versions if version.workflow_hash in bases]


def family_of(base: StoredVersion, versions: Sequence[StoredVersion]) -> list[StoredVersion]:
    """The base and every variant scored of it (the matrix keeps each name's latest)."""
    return [base] + [v for v in versions if v.base_hash == base.workflow_hash]


def variants_matrix(
    reader: Reader,
    schema: str,
    benchmark: BenchmarkSettings,
    base: StoredVersion,
    versions: Sequence[StoredVersion],
    not_deciding: Collection[str] = (),
) -> VariantMatrix | None:
    """The matrix of ``base``'s family, as the report of the base shows it.

    ``not_deciding``: what ``calibration.gate`` keeps from deciding now.
    """
    members = family_of(base, versions)
    hashes = [member.workflow_hash for member in members]
    where = f"workflow_hash in ({placeholders(hashes)})"
    stored = stored_versions(reader, schema, members, not_deciding)
    metrics = list(benchmark.metric_order) or sorted({score.metric for score in stored.scores})
    return family_matrix(
        benchmark.name,
        metrics,
        benchmark.head_to_head,
        base.workflow_hash,
        stored,
        model_rows(reader, AgentOutput, schema, where, hashes, leave_out=_OUTPUT_TEXTS),
        model_rows(reader, WorkflowSnapshot, schema, where, hashes),
    )
