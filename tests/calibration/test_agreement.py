"""Agreement of a judge with people: every figure equals scikit-learn's or krippendorff's."""

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from n8n_deepeval_pipeline.calibration.agreement import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    judge_rating,
    metric_agreement,
)
from tests.calibration.judged_labels import judged

# 12 dataset rows × 2 runs: people's verdict, the judge's, and people's 1–5 rating
PEOPLE = [True, True, False, True, False, False, True, True, True, False, True, False] * 2
JUDGE = [True, False, False, True, True, False, True, True, False, False, True, True] * 2
RATINGS = [5, 4, 1, 4, 2, 1, 5, 3, 4, 2, 5, 2] * 2
SCORES = [0.95, 0.4, 0.1, 0.8, 0.6, 0.2, 0.9, 0.7, 0.45, 0.05, 0.85, 0.55] * 2


def labels_of(people=PEOPLE, judge=JUDGE, ratings=None, scores=SCORES, copies=1):
    """Row i % 12, run i // 12 (each row's runs share a cluster), each label ``copies`` times."""
    found = []
    for i, (person, verdict, score) in enumerate(zip(people, judge, scores, strict=True)):
        for copy in range(copies):
            found.append(
                judged(
                    f"row{i % 12}", i // 12 + 10 * copy, person, verdict, score=score,
                    rating=None if ratings is None else ratings[i],
                )
            )  # fmt: skip
    return found


def cluster_bootstrap_by_hand(people, judge, rows, seed=BOOTSTRAP_SEED):
    """The percentile interval of kappa over resampled rows, written out here."""
    clusters = sorted(set(rows))
    members = {c: [i for i, row in enumerate(rows) if row == c] for c in clusters}
    generator = np.random.default_rng(seed)
    values = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        drawn = generator.integers(0, len(clusters), len(clusters))
        picked = [i for d in drawn for i in members[clusters[d]]]
        value = cohen_kappa_score(
            [people[i] for i in picked], [judge[i] for i in picked], labels=[False, True]
        )
        if not math.isnan(value):
            values.append(value)
    return np.percentile(values, [2.5, 97.5])


def test_kappa_agreement_and_the_confusion_matrix_are_scikit_learns():
    found = metric_agreement("helpfulness", labels_of())
    assert found.kappa.kappa == pytest.approx(cohen_kappa_score(PEOPLE, JUDGE))
    assert found.raw_agreement == pytest.approx(
        sum(a == b for a, b in zip(PEOPLE, JUDGE, strict=True)) / len(PEOPLE)
    )
    (ff, fp), (pf, pp) = confusion_matrix(PEOPLE, JUDGE, labels=[False, True])
    matrix = found.confusion
    assert (matrix.fail_fail, matrix.fail_pass, matrix.pass_fail, matrix.pass_pass) == (
        ff, fp, pf, pp)  # fmt: skip
    assert (found.labels, found.runs, found.clusters) == (24, 24, 12)


def test_the_interval_is_a_seeded_bootstrap_of_dataset_rows():
    found = metric_agreement("helpfulness", labels_of())
    rows = [f"row{i % 12}" for i in range(len(PEOPLE))]
    low, high = cluster_bootstrap_by_hand(PEOPLE, JUDGE, rows)
    assert (found.kappa.low, found.kappa.high) == (pytest.approx(low), pytest.approx(high))
    assert found.kappa.low < found.kappa.kappa < found.kappa.high
    again = metric_agreement("helpfulness", list(reversed(labels_of())))
    assert again.kappa == found.kappa  # the order labels are read in changes nothing


def test_repeats_of_a_row_do_not_narrow_the_interval():
    # Three copies of every run of a row, as three repeated runs answering the same way: a
    # bootstrap of labels would count them as evidence and narrow the interval; one of rows
    # draws the same rows, and kappa of each resample is unchanged.
    once = metric_agreement("helpfulness", labels_of()).kappa
    thrice = metric_agreement("helpfulness", labels_of(copies=3)).kappa
    assert thrice.kappa == pytest.approx(once.kappa)
    assert (thrice.low, thrice.high) == (pytest.approx(once.low), pytest.approx(once.high))


def test_ratings_agree_as_weighted_kappa_and_krippendorffs_alpha_say():
    found = metric_agreement("helpfulness", labels_of(ratings=RATINGS)).ratings
    judge = [judge_rating(score) for score in SCORES]
    assert judge[:4] == [5, 3, 1, 5]  # fifths of the score's range
    assert found.labels == 24
    assert found.weighted_kappa == pytest.approx(
        cohen_kappa_score(RATINGS, judge, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    assert found.alpha == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.array([RATINGS, judge], dtype=float),
            level_of_measurement="ordinal",
        )
    )


def test_a_lower_is_better_score_is_flipped_before_it_is_rated():
    label = judged("r", 0, True, True, score=0.1, rating=5, direction="lower_is_better")
    found = metric_agreement("bias", [label, judged("s", 0, False, False, score=0.9, rating=1,
                                                    direction="lower_is_better")])  # fmt: skip
    assert found.ratings.weighted_kappa == pytest.approx(1.0)  # 0.1 on a lower scale is a 5


def test_every_label_and_verdict_one_class_is_said_not_computed():
    same = [judged(f"r{i}", 0, True, True) for i in range(10)]
    found = metric_agreement("bias", same)
    assert found.kappa.kappa is None and found.kappa.low is None
    assert found.kappa.undefined == (
        "every verdict and every label is pass: agreement by chance is certain"
    )
    assert found.raw_agreement == 1.0
    nothing = metric_agreement("bias", [])
    assert (nothing.labels, nothing.kappa.kappa, nothing.kappa.undefined) == (
        0, None, "nothing to compare")  # fmt: skip


def test_labels_without_a_judgement_or_a_verdict_are_counted_apart():
    found = metric_agreement(
        "helpfulness",
        [
            *labels_of(),
            judged("x", 0, None, True, rating=3),  # a 3 gives no verdict
            judged("y", 0, True, False, score=None, error_kind="judge_error"),
            judged("z", 0, True, True, dry_run=True),
        ],
    )
    assert found.labels == 24
    assert found.left_out == {"no_verdict": 1, "judge_error": 1, "dry_run": 1}


def test_reviewers_agree_with_each_other_as_krippendorff_and_scikit_learn_say():
    ann = labels_of()
    ben_says = [not p if i % 5 == 0 else p for i, p in enumerate(PEOPLE)]
    ben = [
        judged(f"row{i % 12}", i // 12, said, JUDGE[i], reviewer="ben")
        for i, said in enumerate(ben_says)
    ]
    cal = [judged("row0", 0, False, True, reviewer="cal")]  # a third, on one run only
    two = metric_agreement("helpfulness", ann + ben).between_reviewers
    assert (two.runs, two.reviewers) == (24, 2)
    assert two.raw_agreement == pytest.approx(
        sum(a == b for a, b in zip(PEOPLE, ben_says, strict=True)) / 24
    )
    assert two.kappa.kappa == pytest.approx(cohen_kappa_score(PEOPLE, ben_says))
    assert two.alpha == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.array([PEOPLE, ben_says], dtype=float),
            level_of_measurement="nominal",
        )
    )
    three = metric_agreement("helpfulness", ann + ben + cal).between_reviewers
    assert (three.reviewers, three.kappa) == (3, None)  # kappa is for two
    runs = sorted({label.run_id for label in ann})
    by = {(label.reviewer, label.run_id): float(label.passed) for label in ann + ben + cal}
    matrix = [[by.get((name, run), np.nan) for run in runs] for name in ("ann", "ben", "cal")]
    assert three.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=np.array(matrix), level_of_measurement="nominal")
    )
    # the judge is compared with every reviewer's label
    assert metric_agreement("helpfulness", ann + ben).labels == 48
