"""Two versions side by side: the comparison tiers, the pass rates, the cases that moved.

Any two scored versions, in either order, compared as ``compare --baseline A --candidate
B`` compares them (``StoredVersions.compare`` on their stored rows), and shown with the
report's comparison model.
"""

from __future__ import annotations

from collections.abc import Collection

from n8n_deepeval_pipeline.report.model import ComparisonReport
from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.statistics.version_comparison import CaseComparison
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.rows import ExpandedRun, MetricScore, RunAggregate
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, placeholders
from n8n_deepeval_pipeline.workspace.versions import StoredVersion

# What a comparison does not read of a score: its texts and a panel's judges.
_SCORE_TEXTS = ("reason", "error", "judge", "judge_scores")


def stored_versions(
    reader: Reader,
    schema: str,
    versions: list[StoredVersion],
    not_deciding: Collection[str] = (),
) -> StoredVersions:
    """The runs, aggregates and scores of these versions, as the CLI's runner loads them.

    The scores' texts are left out: comparisons and matrices count and average, they quote
    no reason. ``not_deciding``: what ``calibration.gate`` keeps from deciding now.
    """
    hashes = [version.workflow_hash for version in versions]
    where = f"workflow_hash in ({placeholders(hashes)})"
    return StoredVersions(
        runs=model_rows(reader, ExpandedRun, schema, where, hashes),
        aggregates=model_rows(reader, RunAggregate, schema, where, hashes),
        scores=model_rows(reader, MetricScore, schema, where, hashes, leave_out=_SCORE_TEXTS),
        not_deciding=frozenset(not_deciding),
    )


def side_by_side(
    reader: Reader,
    schema: str,
    baseline: StoredVersion,
    candidate: StoredVersion,
    fail_on: GateVerdict,
    not_deciding: Collection[str] = (),
) -> ComparisonReport:
    """``candidate`` against ``baseline``, with the tier ``compare.failOn`` gates on."""
    stored = stored_versions(reader, schema, [baseline, candidate], not_deciding)
    return ComparisonReport(
        baseline_hash=baseline.workflow_hash,
        result=stored.compare(baseline.workflow_hash, candidate.workflow_hash),
        fail_on=fail_on,
    )


def moved(comparison: ComparisonReport) -> tuple[CaseComparison, ...]:
    """The cases whose pass rate changed, the ones that need attention first."""
    return tuple(case for case in comparison.ordered_cases if case.delta)
