"""Combining a judge panel's scores: majority and mean, ties, quorum, direction."""

import pytest

from n8n_deepeval_pipeline.statistics.judge_panel import combine_panel, quorum


def test_majority_takes_the_majority_verdict_and_the_mean_of_its_scores():
    verdict = combine_panel([1.0, 0.8, 0.2], 0.5, "higher_is_better", "majority")
    assert verdict is not None
    assert (verdict.success, verdict.score) == (True, pytest.approx(0.9))  # mean of 1.0, 0.8
    assert verdict.agreement == pytest.approx(2 / 3)
    assert (verdict.answered, verdict.judges) == (3, 3)


def test_majority_and_mean_differ_when_one_judge_is_far_off():
    scores = [1.0, 0.4, 0.4]
    majority = combine_panel(scores, 0.5, "higher_is_better", "majority")
    mean = combine_panel(scores, 0.5, "higher_is_better", "mean")
    assert majority is not None and mean is not None
    assert (majority.success, majority.score, majority.agreement) == (
        False,
        pytest.approx(0.4),
        pytest.approx(2 / 3),
    )
    # the mean 0.6 passes, but only one judge of three said so
    assert (mean.success, mean.score, mean.agreement) == (
        True,
        pytest.approx(0.6),
        pytest.approx(1 / 3),
    )


def test_unanimous_panel_agrees_fully():
    verdict = combine_panel([0.9, 0.7, 0.6], 0.5, "higher_is_better", "mean")
    assert verdict is not None
    assert (verdict.success, verdict.score, verdict.agreement) == (
        True,
        pytest.approx(2.2 / 3),
        1.0,
    )


def test_lower_is_better_metrics_pass_below_the_threshold():
    verdict = combine_panel([0.1, 0.2, 0.9], 0.5, "lower_is_better", "majority")
    assert verdict is not None
    assert (verdict.success, verdict.score, verdict.agreement) == (
        True,
        pytest.approx(0.15),
        pytest.approx(2 / 3),
    )


def test_a_tie_among_answering_judges_is_broken_by_their_mean():
    # one of three judges failed: 1.0 passes, 0.2 fails; the mean 0.6 decides
    verdict = combine_panel([1.0, None, 0.2], 0.5, "higher_is_better", "majority")
    assert verdict is not None
    assert (verdict.success, verdict.score, verdict.agreement) == (True, pytest.approx(0.6), 0.5)
    assert (verdict.answered, verdict.judges) == (2, 3)


def test_a_panel_needs_more_than_half_of_its_judges_to_answer():
    assert [quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]
    assert combine_panel([0.9, None, None], 0.5, "higher_is_better", "majority") is None
    assert combine_panel([0.9, None], 0.5, "higher_is_better", "mean") is None
    assert combine_panel([], 0.5, "higher_is_better", "mean") is None
