"""Thresholds fitted to labels: the best cut, cross-validated, in the metric's direction."""

import pytest
from sklearn.metrics import cohen_kappa_score

from n8n_deepeval_pipeline.calibration.thresholds import candidates, fit_threshold
from n8n_deepeval_pipeline.statistics.pass_direction import passes
from tests.calibration.judged_labels import judged

# 24 dataset rows, a run each: people pass a run when its score reaches 0.7
SCORES = [round(0.04 * i + 0.02, 2) for i in range(24)]


def labelled(people_pass, direction="higher_is_better", threshold=0.5, scores=SCORES):
    """Row i scored ``scores[i]``; ``people_pass(score, i)`` is what the person says."""
    return [
        judged(
            f"row{i}", 0, people_pass(score, i), passes(score, threshold, direction),
            score=score, direction=direction, threshold=threshold,
        )
        for i, score in enumerate(scores)
    ]  # fmt: skip


def test_the_cut_people_make_is_found_between_the_scores_around_it():
    fit = fit_threshold(
        "helpfulness", labelled(lambda s, _: s >= 0.7), 0.5, False, "higher_is_better"
    )
    assert fit.fitted == pytest.approx(0.68)  # between the scores 0.66 and 0.70
    assert fit.fitted_kappa == pytest.approx(1.0)
    # each fold's cut sits between the scores it was fitted on, so a held-out row between
    # them can fall on the wrong side: 0.9, not the 1.0 of the labels the fit saw
    assert fit.cross_validated_kappa == pytest.approx(0.9032258) and fit.folds == 5
    people = [s >= 0.7 for s in SCORES]
    assert fit.configured_kappa == pytest.approx(
        cohen_kappa_score(people, [s >= 0.5 for s in SCORES])
    )
    assert (fit.labels, fit.fewer_verdict) == (24, 7)
    assert fit.refusal == "7 labels of the rarer verdict: at least 10 of each are needed"


def test_a_lower_is_better_metric_passes_at_or_below_its_fitted_threshold():
    fit = fit_threshold(
        "bias", labelled(lambda s, _: s <= 0.3, "lower_is_better"), 0.5, False, "lower_is_better"
    )
    assert fit.fitted == pytest.approx(0.32) and fit.fitted_kappa == pytest.approx(1.0)
    assert passes(0.30, fit.fitted, "lower_is_better") and not passes(
        0.34, fit.fitted, "lower_is_better"
    )
    people = [s <= 0.3 for s in SCORES]
    assert fit.configured_kappa == pytest.approx(
        cohen_kappa_score(people, [s <= 0.5 for s in SCORES])
    )


def test_a_fit_from_enough_of_each_verdict_that_agrees_better_may_be_adopted():
    scores = [round(0.02 * i + 0.01, 2) for i in range(48)]
    fit = fit_threshold(
        "helpfulness",
        labelled(lambda s, _: s >= 0.45, threshold=0.8, scores=scores),
        0.8,
        False,
        "higher_is_better",
    )
    assert fit.fewer_verdict == 22 and fit.fitted == pytest.approx(0.44)
    assert fit.fitted_kappa == pytest.approx(1.0)
    assert fit.configured_kappa == pytest.approx(0.2894737)
    assert fit.adoptable and fit.refusal is None


def test_strict_mode_pins_the_threshold_so_the_fit_is_only_shown():
    fit = fit_threshold(
        "helpfulness", labelled(lambda s, _: s >= 0.7), 1.0, True, "higher_is_better"
    )
    assert fit.fitted == pytest.approx(0.68)
    assert fit.refusal == "strictMode pins the threshold"


def test_held_out_rows_are_judged_by_a_threshold_fitted_without_them():
    # People's cut is 0.7 on odd rows and 0.3 on even ones: no single threshold fits both,
    # and the held-out kappa says so where the in-sample one flatters.
    def person(score: float, row: int) -> bool:
        return score >= (0.7 if row % 2 else 0.3)

    fit = fit_threshold("helpfulness", labelled(person), 0.5, False, "higher_is_better")
    assert fit.fitted_kappa == pytest.approx(2 / 3)
    assert fit.cross_validated_kappa == pytest.approx(1 / 3)


def test_candidates_split_every_way_the_scores_allow_within_them():
    assert candidates([0.2, 0.2, 0.5, 0.9]) == [0.2, 0.35, 0.7, 0.9]
    assert candidates([0.4]) == [0.4]
