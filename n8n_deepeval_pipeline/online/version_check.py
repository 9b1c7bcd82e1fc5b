"""The newest workflow version's production pass rate against the version before it.

After an edit in production the question is whether the new version's traffic scores
worse. The versions are the benchmark's, in the order they were registered (the order its
own comparison takes the baseline from); the candidate is the newest one with items in the
days looked back over, the baseline the newest registered before it with items there.
Their items (an execution or a chat session, passed when every metric passed) are compared
as the benchmark compares a case's runs in two versions: one-sided Fisher's exact test and
its tiers, each side's pass rate with its Wilson 95% interval. Scores tagged with a version
the benchmark could not register (``stored_copy``) take no part.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from n8n_deepeval_pipeline.online.scoring import OnlineScore
from n8n_deepeval_pipeline.online.windows import ItemRate
from n8n_deepeval_pipeline.statistics.gates import GateVerdict, fails_gate
from n8n_deepeval_pipeline.statistics.version_comparison import Verdict, compare_case
from n8n_deepeval_pipeline.workflow.hashing import version_key


class VersionRate(ItemRate):
    """One version's items, passes and pass rate with its Wilson interval."""

    version: str


class VersionRegression(BaseModel):
    """The candidate version against its baseline, and whether the drop fails the check."""

    candidate: VersionRate | None
    baseline: VersionRate | None
    verdict: Verdict
    p_value_drop: float | None
    regressed: bool


def _rate(version: str, scores: Sequence[OnlineScore]) -> VersionRate:
    served = (score for score in scores if version_key(score.workflow_hash) == version)
    return VersionRate.of(served, version=version)


def compare_newest_versions(
    scores: Sequence[OnlineScore], registered: Sequence[str], fail_on: GateVerdict
) -> VersionRegression:
    """The newest registered version with items against the one registered before it.

    ``registered``: the benchmark's version keys, oldest first.
    """
    named = [score for score in scores if score.version_match == "version_id"]
    served = {version_key(score.workflow_hash) for score in named}
    ordered = [version for version in registered if version in served]
    if len(ordered) < 2:
        only = _rate(ordered[-1], named) if ordered else None
        return VersionRegression(
            candidate=only,
            baseline=None,
            verdict="insufficient_data",
            p_value_drop=None,
            regressed=False,
        )
    baseline, candidate = _rate(ordered[-2], named), _rate(ordered[-1], named)
    case = compare_case("online", baseline.flags(), candidate.flags())
    return VersionRegression(
        candidate=candidate,
        baseline=baseline,
        verdict=case.verdict,
        p_value_drop=case.p_value_drop,
        regressed=fails_gate(case.verdict, fail_on),
    )
