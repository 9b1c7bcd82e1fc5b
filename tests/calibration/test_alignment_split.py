"""Labelled runs split by dataset row for --align: repeats never straddle, seeded, checked."""

import pytest

from n8n_deepeval_pipeline.calibration.alignment_split import labelled_runs, split_labelled
from n8n_deepeval_pipeline.statistics.held_out_draw import SplitError
from tests.calibration.judged_labels import HASH, judged

OTHER = "b" * 64  # a second version of the workflow


def labels(rows: int, repeats: int = 3) -> list:
    """Each row's repeats labelled by ann (row r3 fails), and each row's run 0 in a second
    version too."""
    found = [
        judged(f"r{row}", index, passed=row != 3, judge_passed=True)
        for row in range(rows)
        for index in range(repeats)
    ]
    found += [
        judged(f"r{row}", 0, passed=row != 3, judge_passed=True).model_copy(
            update={
                "run_id": f"{OTHER}:r{row}:0",
                "case_id": f"{OTHER}:r{row}",
                "workflow_hash": OTHER,
            }
        )
        for row in range(rows)
    ]
    return found


def test_a_rows_runs_in_every_version_fall_on_one_side_together():
    runs = labelled_runs(labels(10), "helpfulness")
    assert len(runs) == 40
    split = split_labelled(runs, 0.3, seed=0)
    held = {run.cluster for run in split.held_out}
    trained = {run.cluster for run in split.training}
    assert len(held) == 3 and len(trained) == 7 and not held & trained
    assert len(split.held_out) == 3 * 4  # three repeats and the other version's run, per row
    assert {run.workflow_hash for run in split.held_out} == {HASH, OTHER}
    assert split.rows(True) == sorted(held)


def test_the_split_depends_on_the_seed_and_the_rows_not_the_label_order():
    runs = labelled_runs(labels(10), "helpfulness")
    first = split_labelled(runs, 0.3, seed=0)
    again = split_labelled(labelled_runs(list(reversed(labels(10))), "helpfulness"), 0.3, 0)
    assert again == first
    assert split_labelled(runs, 0.3, seed=1).rows(True) != first.rows(True)
    with pytest.raises(SplitError, match="2 rows: at least 3"):
        split_labelled(labelled_runs(labels(2), "helpfulness"), 0.3, 0)


def test_each_run_keeps_every_reviewers_verdict_and_a_tie_teaches_nothing():
    found = [
        judged("r1", 0, True, True), judged("r1", 0, False, True, reviewer="bob"),
        judged("r2", 0, False, True), judged("r2", 0, False, True, reviewer="bob"),
        judged("r2", 0, True, True, reviewer="cy"),
        judged("r3", 0, None, True, rating=3),  # a 3 gives no verdict
        judged("r4", 0, True, True, metric="bias"),  # another metric
        judged("r5", 0, True, True, kind="online"),  # not a stored benchmark run
    ]  # fmt: skip
    runs = {run.run_id.split(":", 1)[1]: run for run in labelled_runs(found, "helpfulness")}
    assert sorted(runs) == ["r1:0", "r2:0"]
    assert runs["r1:0"].verdicts == (True, False) and runs["r1:0"].people is None
    assert runs["r2:0"].verdicts == (False, False, True) and runs["r2:0"].people is False


def test_a_split_that_cannot_show_an_improvement_says_why():
    runs = labelled_runs(labels(10), "helpfulness")
    splits = [split_labelled(runs, 0.3, seed) for seed in range(20)]
    passing = next(split for split in splits if "r3" not in split.rows(True))
    assert passing.problem() == (
        f"every label of the held-out rows ({', '.join(passing.rows(True))}) says pass: kappa "
        "cannot be compared there; label runs of the other verdict, or hold out other rows "
        "(calibration.align.split.seed)"
    )
    assert next(split for split in splits if "r3" in split.rows(True)).problem() is None
    # Two reviewers who disagree on every run leave the search nothing to learn from.
    tied = [
        judged(f"r{row}", 0, passed=reviewer == "ann", judge_passed=True, reviewer=reviewer)
        for row in range(4)
        for reviewer in ("ann", "bob")
    ]
    split = split_labelled(labelled_runs(tied, "helpfulness"), 0.25, seed=0)
    assert (split.ties, split.examples) == (3, ())
    assert split.problem() == (
        "0 training runs with a verdict their reviewers agree on: the search needs two at least"
    )
