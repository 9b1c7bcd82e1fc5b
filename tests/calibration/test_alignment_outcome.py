"""Kappa on the held-out runs before and after, as scikit-learn computes it; kept or not."""

from sklearn.metrics import cohen_kappa_score, confusion_matrix

from n8n_deepeval_pipeline.calibration.alignment_goldens import Verdict
from n8n_deepeval_pipeline.calibration.alignment_outcome import decision, held_out_agreement
from n8n_deepeval_pipeline.calibration.alignment_split import LabelledRun

RUNS = [
    LabelledRun(run_id=f"h:r{row}:{index}", case_id=f"h:r{row}", workflow_hash="h",
                cluster=f"r{row}", verdicts=verdicts)
    for row, index, verdicts in [
        (1, 0, (True, True)), (1, 1, (True, False)), (2, 0, (False, False)),
        (2, 1, (False,)), (3, 0, (True,)), (4, 0, (True, True)), (4, 1, (False, True)),
    ]
]  # fmt: skip
JUDGE = {"h:r1:0": True, "h:r1:1": True, "h:r2:0": False, "h:r2:1": True, "h:r3:0": True,
         "h:r4:0": False, "h:r4:1": True}  # fmt: skip


def verdicts(judge: dict[str, bool | None]) -> dict[str, Verdict]:
    return {run: Verdict(passed=said) for run, said in judge.items()}


def test_every_label_of_a_held_out_run_counts_as_scikit_learn_counts_it():
    measured = held_out_agreement(RUNS, verdicts(JUDGE))
    people = [v for run in RUNS for v in run.verdicts]
    judge = [JUDGE[run.run_id] for run in RUNS for _ in run.verdicts]
    assert measured.labels == len(people) == 12
    assert measured.kappa.kappa == cohen_kappa_score(people, judge)
    assert measured.kappa.clusters == 4  # resampled by dataset row
    assert measured.kappa.low is not None and measured.kappa.low <= measured.kappa.kappa
    assert measured.raw_agreement == sum(a == b for a, b in zip(people, judge, strict=True)) / 12
    (ff, fp), (pf, pp) = confusion_matrix(people, judge, labels=[False, True]).tolist()
    assert measured.confusion.model_dump() == {
        "fail_fail": ff, "fail_pass": fp, "pass_fail": pf, "pass_pass": pp}  # fmt: skip
    # A run the judge gave no verdict is left out, and its labels counted apart.
    measured = held_out_agreement(RUNS, verdicts({**JUDGE, "h:r4:1": None}))
    assert (measured.labels, measured.no_verdict) == (10, 2)


def test_the_rewrite_is_kept_only_when_held_out_kappa_rose():
    before = held_out_agreement(RUNS, verdicts(JUDGE))
    perfect = {run.run_id: run.people for run in RUNS if run.people is not None}
    after = held_out_agreement(RUNS, verdicts({**JUDGE, **perfect}))
    assert after.kappa.kappa > before.kappa.kappa
    assert decision(before, after, changed=True) == "improved"
    assert decision(after, before, changed=True) == "not_improved"
    assert decision(before, before, changed=True) == "not_improved"  # equal is not better
    assert decision(before, after, changed=False) == "unchanged"
    undefined = held_out_agreement(RUNS, verdicts(dict.fromkeys(JUDGE, None)))
    assert undefined.kappa.kappa is None
    assert decision(undefined, after, changed=True) == "improved"
    assert decision(before, undefined, changed=True) == "not_improved"
