"""The labelled runs of one metric, split by dataset row into training and held-out runs.

A run's repeats (and the same row in other versions) answer one input: their labels are
not independent, so they fall on one side of the split together. The split draws whole
dataset rows by a seed (``statistics.held_out_draw``, the same draw ``optimize`` makes),
so the same labels and seed always hold out the same rows. The training runs become the
optimiser's examples, each with the verdict most of its reviewers gave (a tie gives none,
and the run is left out of the search); every label of a held-out run counts in the
kappa measured before and after, as ``calibration`` counts them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.statistics.held_out_draw import held_out_ids


class LabelledRun(BaseModel):
    """One run of the metric and its reviewers' verdicts."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    case_id: str
    workflow_hash: str
    cluster: str  # its dataset row
    verdicts: tuple[bool, ...]  # one per reviewer, in reviewer order

    @property
    def people(self) -> bool | None:
        """The verdict most reviewers gave (None: as many passed it as failed it)."""
        passed = sum(self.verdicts)
        failed = len(self.verdicts) - passed
        return None if passed == failed else passed > failed


def labelled_runs(labels: Sequence[JudgedLabel], metric: str) -> list[LabelledRun]:
    """The benchmark runs labelled pass or fail for ``metric``, in run id order.

    Online items and red-team attacks are left out: their text is not among the version's
    stored runs. A rating of 3 gives no verdict and is left out too.
    """
    verdicts: dict[str, dict[str, bool]] = defaultdict(dict)
    runs: dict[str, JudgedLabel] = {}
    for label in labels:
        if label.metric != metric or label.kind != "benchmark" or label.passed is None:
            continue
        verdicts[label.run_id][label.reviewer] = label.passed
        runs[label.run_id] = label
    return [
        LabelledRun(
            run_id=run_id,
            case_id=runs[run_id].case_id,
            workflow_hash=runs[run_id].workflow_hash,
            cluster=runs[run_id].cluster,
            verdicts=tuple(verdicts[run_id][name] for name in sorted(verdicts[run_id])),
        )
        for run_id in sorted(runs)
    ]


class AlignmentSplit(BaseModel):
    """Training runs (the search's examples) and held-out runs (kappa before and after)."""

    model_config = ConfigDict(frozen=True)

    training: tuple[LabelledRun, ...]
    held_out: tuple[LabelledRun, ...]

    @property
    def examples(self) -> tuple[LabelledRun, ...]:
        """The training runs whose reviewers agree on a verdict (a tie teaches nothing)."""
        return tuple(run for run in self.training if run.people is not None)

    @property
    def ties(self) -> int:
        """Training runs left out because their reviewers split evenly."""
        return len(self.training) - len(self.examples)

    def rows(self, held_out: bool) -> list[str]:
        """The dataset rows on one side of the split."""
        side = self.held_out if held_out else self.training
        return sorted({run.cluster for run in side})

    def problem(self) -> str | None:
        """Why this split cannot show an improvement (None: it can)."""
        people = {verdict for run in self.held_out for verdict in run.verdicts}
        if len(people) < 2:
            only = "pass" if True in people else "fail"
            return (
                f"every label of the held-out rows ({', '.join(self.rows(True))}) says {only}: "
                "kappa cannot be compared there; label runs of the other verdict, or hold "
                "out other rows (calibration.align.split.seed)"
            )
        if len(self.examples) < 2:
            return (
                f"{len(self.examples)} training runs with a verdict their reviewers agree on: "
                "the search needs two at least"
            )
        return None


def split_labelled(runs: Sequence[LabelledRun], share: float, seed: int) -> AlignmentSplit:
    """``runs`` split by dataset row: about ``share`` of the rows held out, drawn by ``seed``.

    ``SplitError`` when fewer than three rows are labelled.
    """
    held = held_out_ids((run.cluster for run in runs), share, seed)
    return AlignmentSplit(
        training=tuple(run for run in runs if run.cluster not in held),
        held_out=tuple(run for run in runs if run.cluster in held),
    )
