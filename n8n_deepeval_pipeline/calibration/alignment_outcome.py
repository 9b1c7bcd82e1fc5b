"""What ``calibration --align`` found: kappa on the held-out runs before and after, and why.

The search maximises raw agreement on the training runs; whether its text is kept is
decided on runs it never saw: every label of the held-out rows set beside the judge's
verdict with the metric's own text (*before*) and with the best text (*after*), Cohen's
kappa with its bootstrap interval over dataset rows, as ``calibration`` measures it. The
rewrite is kept only when kappa there rose. A verdict the judge could not give (an
evaluation that errored) is left out of kappa and counted.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.calibration.agreement import (
    Confusion,
    KappaEstimate,
    Pair,
    confusion,
    kappa_estimate,
)
from n8n_deepeval_pipeline.calibration.alignment_goldens import Verdict
from n8n_deepeval_pipeline.calibration.alignment_split import LabelledRun

Decision = Literal["improved", "not_improved", "unchanged"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class HeldOutAgreement(_Frozen):
    """One text's verdicts on the held-out runs against every label of them."""

    labels: int  # labels set beside a verdict
    raw_agreement: float | None
    kappa: KappaEstimate
    confusion: Confusion
    no_verdict: int  # labels of runs on which the judge gave no verdict (left out)


def held_out_agreement(
    runs: Sequence[LabelledRun], verdicts: Mapping[str, Verdict]
) -> HeldOutAgreement:
    """Kappa (rows resampled), raw agreement and confusion of ``verdicts`` against the labels."""
    clusters: dict[str, list[Pair]] = defaultdict(list)
    people: list[bool] = []
    judge: list[bool] = []
    no_verdict = 0
    for run in sorted(runs, key=lambda run: run.run_id):
        said = verdicts[run.run_id].passed
        if said is None:
            no_verdict += len(run.verdicts)
            continue
        for verdict in run.verdicts:
            clusters[run.cluster].append((verdict, said))
            people.append(verdict)
            judge.append(said)
    agreeing = sum(a == b for a, b in zip(people, judge, strict=True))
    return HeldOutAgreement(
        labels=len(people),
        raw_agreement=agreeing / len(people) if people else None,
        kappa=kappa_estimate([clusters[key] for key in sorted(clusters)]),
        confusion=confusion(people, judge),
        no_verdict=no_verdict,
    )


def decision(before: HeldOutAgreement, after: HeldOutAgreement, changed: bool) -> Decision:
    """Kept only when the text changed and kappa on the held-out runs rose."""
    if not changed:
        return "unchanged"
    low, high = before.kappa.kappa, after.kappa.kappa
    if high is not None and (low is None or high > low):
        return "improved"
    return "not_improved"


def text_diff(before: str, after: str, what: str) -> str:
    """The best text against the metric's own, line by line."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"{what} (configured)", f"{what} (aligned)",
        lineterm="",
    )  # fmt: skip
    return "\n".join(lines) or "(the same text)"


def _kappa(agreement: HeldOutAgreement) -> str:
    estimate = agreement.kappa
    if estimate.kappa is None:
        return f"kappa undefined ({estimate.undefined})"
    interval = (
        f" [{estimate.low:.2f}, {estimate.high:.2f}]"
        if estimate.low is not None and estimate.high is not None
        else ""
    )
    agree = "" if agreement.raw_agreement is None else f" · agree {agreement.raw_agreement:.2f}"
    matrix = agreement.confusion
    cells = f"{matrix.fail_fail} {matrix.fail_pass} {matrix.pass_fail} {matrix.pass_pass}"
    left = f" · {agreement.no_verdict} labels without a verdict" if agreement.no_verdict else ""
    return f"kappa {estimate.kappa:.2f}{interval}{agree} · ff fp pf pp {cells}{left}"


def held_out_lines(before: HeldOutAgreement, after: HeldOutAgreement) -> list[str]:
    """Kappa on the held-out runs with the configured text and the aligned one."""
    return [f"  before (configured): {_kappa(before)}", f"  after (aligned):     {_kappa(after)}"]
