import pytest

from n8n_deepeval_pipeline.statistics.aggregate import MetricOutcome, aggregate_run, rule_passes
from n8n_deepeval_pipeline.statistics.pass_direction import effective_threshold, normalised, passes


@pytest.mark.parametrize(
    ("rule", "passed", "counted", "expected"),
    [
        ("allPass", 3, 3, True),
        ("allPass", 2, 3, False),
        ("anyPass", 1, 3, True),
        ("anyPass", 0, 3, False),
        ("majorityPass", 2, 3, True),
        ("majorityPass", 2, 4, False),  # exactly half is not a majority
        ("majorityPass", 3, 4, True),
        ("allPass", 0, 0, False),
    ],
)
def test_pass_rules(rule, passed, counted, expected):
    assert rule_passes(rule, passed, counted) is expected


def test_direction_and_strict_mode():
    assert passes(0.5, 0.5, "higher_is_better") and not passes(0.49, 0.5, "higher_is_better")
    assert passes(0.2, 0.5, "lower_is_better") and not passes(0.6, 0.5, "lower_is_better")
    assert not passes(None, 0.0, "lower_is_better")
    assert effective_threshold(0.3, True, "higher_is_better") == 1.0
    assert effective_threshold(0.3, True, "lower_is_better") == 0.0
    assert effective_threshold(0.3, False, "lower_is_better") == 0.3
    assert normalised(0.25, "lower_is_better") == 0.75


def outcome(metric, score, success, direction="higher_is_better", error=None):
    return MetricOutcome(
        metric=metric,
        score=score,
        normalised_score=normalised(score, direction),
        success=success,
        error_kind=error,
    )


def test_overall_score_normalises_direction_and_keeps_the_raw_mean():
    result = aggregate_run(
        [outcome("g", 0.8, True), outcome("bias", 0.2, True, "lower_is_better")], "allPass"
    )
    assert result.overall_score == pytest.approx(0.8)
    assert result.raw_mean_score == pytest.approx(0.5)
    assert result.overall_success is True


def test_an_errored_metric_fails_and_has_no_score():
    result = aggregate_run(
        [outcome("g", 0.9, True), outcome("loop", None, False, error="missing_input")], "anyPass"
    )
    assert (result.passed, result.counted, result.errors) == (1, 2, 1)
    assert result.overall_score == pytest.approx(0.9)
    assert result.overall_success is True
    assert (
        aggregate_run([outcome("loop", None, False, error="timeout")], "allPass").overall_score
        is None
    )
