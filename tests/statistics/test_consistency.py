import math

import pytest

from n8n_deepeval_pipeline.statistics.consistency import (
    RunResult,
    case_consistency,
    coefficient_of_variation,
    label_stats,
    pass_at_k,
    pass_hat_k,
)


def run(score, success, label=None, metrics=None):
    metrics = metrics or {"m": (score, success)}
    return RunResult(
        overall_score=score,
        overall_success=success,
        metric_scores={k: v[0] for k, v in metrics.items()},
        metric_success={k: v[1] for k, v in metrics.items()},
        label=label,
    )


def test_score_stats_on_hand_computed_data():
    # scores 0.2, 0.4, 0.6: mean 0.4, population variance 0.08/3, sample SD 0.2
    stats = case_consistency([run(0.2, False), run(0.4, False), run(0.6, True)], "cv")
    assert stats.score.mean == pytest.approx(0.4)
    assert stats.score.variance == pytest.approx(0.08 / 3)
    assert stats.score.std == pytest.approx(math.sqrt(0.08 / 3))
    assert stats.score.cv == pytest.approx(0.2 / 0.4)
    assert stats.pass_rate == pytest.approx(1 / 3)
    assert stats.majority_success is False
    assert stats.overall_consistency == pytest.approx(0.5)  # 1 - min(1, mean per-metric cv)


def test_one_run_and_zero_mean_give_cv_zero():
    assert coefficient_of_variation([0.7]) == 0.0
    assert coefficient_of_variation([0.0, 0.0]) == 0.0
    stats = case_consistency([run(0.7, True)], "cv")
    assert (stats.score.cv, stats.score.variance, stats.overall_consistency) == (0.0, 0.0, 1.0)
    assert stats.pass_at_k == {1: 1.0} and stats.pass_hat_k == {1: 1.0}


def test_overall_consistency_caps_cv_at_one():
    stats = case_consistency([run(0.01, False), run(0.9, True)], "cv")
    assert stats.overall_consistency == 0.0


def test_per_metric_stats_count_errors_as_failures_without_scores():
    runs = [
        run(0.5, True, metrics={"a": (1.0, True), "b": (0.2, True)}),
        run(0.5, False, metrics={"a": (0.0, False), "b": (None, False)}),
        run(0.5, True, metrics={"a": (1.0, True), "b": (0.4, True)}),
    ]
    by_name = {m.metric: m for m in case_consistency(runs, "cv").per_metric}
    assert by_name["a"].pass_rate == pytest.approx(2 / 3) and by_name["a"].majority_success
    assert (by_name["a"].min, by_name["a"].max) == (0.0, 1.0)
    assert by_name["b"].run_count == 3
    assert by_name["b"].mean == pytest.approx(0.3)
    assert by_name["b"].pass_rate == pytest.approx(2 / 3)


def test_labels_entropy_agreement_and_bases():
    labels = label_stats(["yes", "no", "yes", "maybe"])
    # p = 1/2, 1/4, 1/4 → H = 1.5 bits; log2(3) distinct labels
    assert labels.entropy == pytest.approx(1.5)
    assert labels.normalized_entropy == pytest.approx(1.5 / math.log2(3))
    assert labels.agreement == 0.5
    assert labels.majority_label == "yes"
    assert label_stats(["no", "yes"]).majority_label == "no"  # ties go to the first seen
    single = label_stats(["ok", "ok"])
    assert (single.entropy, single.normalized_entropy, single.agreement) == (0.0, 0.0, 1.0)
    assert math.copysign(1, single.entropy) == 1  # not -0.0
    runs = [run(1, True, "yes"), run(1, True, "no"), run(1, True, "yes"), run(1, True, "maybe")]
    assert case_consistency(runs, "entropy").overall_consistency == pytest.approx(
        1 - 1.5 / math.log2(3)
    )
    assert case_consistency(runs, "agreement").overall_consistency == 0.5
    assert case_consistency([run(1, True)], "agreement").overall_consistency is None


@pytest.mark.parametrize(
    ("n", "c", "k", "at", "hat"),
    [
        (3, 1, 1, 1 / 3, 1 / 3),
        (3, 1, 2, 2 / 3, 0.0),
        (3, 2, 2, 1.0, 1 / 3),
        (5, 3, 2, 1 - 1 / 10, 3 / 10),
        (4, 0, 3, 0.0, 0.0),
        (4, 4, 4, 1.0, 1.0),
    ],
)
def test_pass_at_k_and_pass_hat_k_unbiased_estimators(n, c, k, at, hat):
    assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_case_gives_pass_at_k_for_every_k_up_to_runs():
    stats = case_consistency([run(1, True), run(0, False), run(1, True)], "cv")
    assert stats.pass_at_k == pytest.approx({1: 2 / 3, 2: 1.0, 3: 1.0})
    assert stats.pass_hat_k == pytest.approx({1: 2 / 3, 2: 1 / 3, 3: 0.0})
