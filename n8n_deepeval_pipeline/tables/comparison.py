"""The comparison of two stored versions: their runs by row id, the baseline, the verdict rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from n8n_deepeval_pipeline.statistics.aggregate import PassRule, decided_by, rule_passes
from n8n_deepeval_pipeline.statistics.version_comparison import (
    MetricRun,
    RunOutcome,
    VersionComparison,
    VersionRuns,
    compare_versions,
)
from n8n_deepeval_pipeline.tables.rows import (
    CaseVerdict,
    ExpandedRun,
    MetricScore,
    RunAggregate,
    WorkflowSnapshot,
    full_hash,
    of_version,
    scores_by_run,
)
from n8n_deepeval_pipeline.workflow.hashing import version_key


class UnknownVersionError(ValueError):
    """A version named by hash or prefix that is not (or not uniquely) a known version."""


def resolve_version(known: list[str], prefix: str) -> str:
    """The one known version whose hash starts with ``prefix``."""
    matches = [version for version in known if version.startswith(prefix)]
    if len(matches) != 1:
        what = "no known version" if not matches else f"{len(matches)} versions"
        listing = ", ".join(version_key(version) for version in known) or "none"
        raise UnknownVersionError(f"{what} starts with {prefix!r} (known: {listing})")
    return matches[0]


def variant_bases(snapshots: Iterable[WorkflowSnapshot]) -> dict[str, str]:
    """Each variant's version key → its base's version key, from the stored snapshots."""
    return {
        version_key(snapshot.workflow_hash): version_key(snapshot.base_hash)
        for snapshot in snapshots
        if snapshot.base_hash is not None
    }


def baseline_version(
    known: list[str], candidate: str, pinned: str | None, bases: Mapping[str, str] | None = None
) -> str | None:
    """The version a candidate is compared with.

    A variant's is its base (when it has been run). Any other version's is the pinned one,
    else the one registered just before the candidate; variants (``bases``' keys) are never
    a baseline: they are set beside their base, not an edit that came before.
    """
    bases = bases or {}
    if candidate in bases:
        base = bases[candidate]
        return base if base in known else None
    versions = [version for version in known if version not in bases]
    if pinned is not None:
        return resolve_version(versions, pinned)
    earlier = versions[: versions.index(candidate)] if candidate in versions else versions
    return earlier[-1] if earlier else None


def run_passes(
    outcomes: Sequence[Mapping[str, Any]],
    pass_rule: str,
    stored: bool,
    not_deciding: Collection[str] = (),
) -> bool:
    """Whether a run passes its pass rule now.

    ``outcomes``: its aggregate's metric outcomes (``RunAggregate.metrics``), ``stored``: its
    aggregate's verdict. ``not_deciding``: metrics that decide no run now
    (``calibration.gate``), though they may have when the run was aggregated: the run is
    decided again without them, so that a baseline aggregated before the gate is compared
    on the same metrics as its candidate.
    """
    counted = {str(outcome["metric"]) for outcome in outcomes}
    deciding = decided_by(counted, not_deciding)
    if deciding == counted:
        return stored
    kept = [outcome for outcome in outcomes if outcome["metric"] in deciding]
    wins = sum(1 for o in kept if o.get("success") and o.get("error_kind") is None)
    return rule_passes(cast(PassRule, pass_rule), wins, len(kept))


def run_outcome(
    aggregate: RunAggregate, scores: list[MetricScore], not_deciding: Collection[str] = ()
) -> RunOutcome:
    """A run as the version comparison sees it: passed under the pass rule, its metrics.

    ``not_deciding``: metrics the run is decided again without (``run_passes``).
    """
    deciding = decided_by({str(outcome["metric"]) for outcome in aggregate.metrics}, not_deciding)
    passed = run_passes(
        aggregate.metrics, aggregate.pass_rule, aggregate.overall_success, not_deciding
    )
    metrics = tuple(
        MetricRun(
            metric=score.metric,
            score=score.score,
            success=score.success,
            error_kind=score.error_kind,
            counted=score.metric in deciding,
        )
        for score in scores
    )
    return RunOutcome(passed=passed, metrics=metrics)


def version_runs(
    runs: list[ExpandedRun],
    aggregates: list[RunAggregate],
    scores: list[MetricScore],
    not_deciding: Collection[str] = (),
) -> VersionRuns:
    """Each dataset row's runs (pass or fail under the pass rule, with their metrics).

    Cases are matched across versions by row id: case and run ids carry the hash.
    """
    row_of = {run.run_id: run.row_id for run in runs}
    scores_of = scores_by_run(scores)
    outcomes: dict[str, list[RunOutcome]] = defaultdict(list)
    for aggregate in sorted(aggregates, key=lambda row: row.run_id):
        outcome = run_outcome(aggregate, scores_of[aggregate.run_id], not_deciding)
        outcomes[row_of[aggregate.run_id]].append(outcome)
    return dict(outcomes)


def verdict_rows(comparison: VersionComparison, baseline: str, candidate: str) -> list[CaseVerdict]:
    """One row per case, stored under the candidate version."""
    return [
        CaseVerdict(
            workflow_hash=candidate,
            baseline_hash=baseline,
            row_id=case.row_id,
            baseline_passed=case.baseline.passed,
            baseline_runs=case.baseline.runs,
            candidate_passed=case.candidate.passed,
            candidate_runs=case.candidate.runs,
            delta=case.delta,
            p_value_drop=case.p_value_drop,
            p_value_rise=case.p_value_rise,
            verdict=case.verdict,
        )
        for case in comparison.cases
    ]


@dataclass(frozen=True)
class StoredVersions:
    """The stored rows of several versions, loaded together; any two can be compared."""

    runs: list[ExpandedRun]
    aggregates: list[RunAggregate]
    scores: list[MetricScore]
    not_deciding: frozenset[str] = field(default_factory=frozenset)
    """Metrics that decide no run or regression now (uncalibrated, ``calibration.gate``)."""

    def runs_of(self, version: str) -> VersionRuns:
        """One version's runs by row id."""
        return version_runs(
            of_version(self.runs, version),
            of_version(self.aggregates, version),
            of_version(self.scores, version),
            self.not_deciding,
        )

    def full_hash(self, version: str) -> str:
        """The full workflow hash of a version named by its key."""
        return full_hash(self.runs, version)

    def compare(self, baseline: str, candidate: str) -> VersionComparison:
        """The candidate version against the baseline."""
        return compare_versions(self.runs_of(baseline), self.runs_of(candidate))
