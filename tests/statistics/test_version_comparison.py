import math
from typing import get_args

import pytest
from scipy.stats import binomtest, fisher_exact

from n8n_deepeval_pipeline.evaluation import ErrorKind
from n8n_deepeval_pipeline.statistics.gates import fails_gate
from n8n_deepeval_pipeline.statistics.version_comparison import (
    FAILURE_CATEGORIES,
    FAILURE_CATEGORY_OF_ERROR_KIND,
    VERDICTS,
    MetricRun,
    RunOutcome,
    compare_case,
    compare_versions,
    failure_drift,
    fisher_p_values,
    gate_reach,
    metric_deltas,
    pass_count,
    run_failure_categories,
    wilson_interval,
)
from tests.conftest import Z_95, wilson_by_hand


def flags(passed, runs):
    return [True] * passed + [False] * (runs - passed)


def case(baseline, candidate):
    """Compare one case from (passed, runs) on each side."""
    return compare_case("row", flags(*baseline), flags(*candidate))


def hypergeometric_left_tail(cand_passed, cand_runs, base_passed, base_runs):
    """P(candidate passes ≤ cand_passed) with the margins fixed, summed by hand."""
    passes = cand_passed + base_passed
    fails = cand_runs + base_runs - passes
    total = math.comb(passes + fails, cand_runs)
    return sum(
        math.comb(passes, k) * math.comb(fails, cand_runs - k) / total
        for k in range(0, cand_passed + 1)
    )


# --- Fisher's exact p-values -------------------------------------------------------------

P_VALUE_FIXTURES = [
    ((3, 3), (0, 3)),
    ((5, 5), (1, 5)),
    ((10, 20), (3, 20)),
    ((2, 10), (8, 10)),
    ((7, 9), (7, 9)),
    ((70, 100), (40, 100)),
    ((1, 4), (6, 11)),
]


@pytest.mark.parametrize(("baseline", "candidate"), P_VALUE_FIXTURES)
def test_p_values_match_scipy_fisher_exact(baseline, candidate):
    base_passed, base_runs = baseline
    cand_passed, cand_runs = candidate
    table = [[cand_passed, cand_runs - cand_passed], [base_passed, base_runs - base_passed]]
    p_values = fisher_p_values(pass_count(flags(*baseline)), pass_count(flags(*candidate)))
    assert p_values.drop == pytest.approx(fisher_exact(table, alternative="less").pvalue)
    assert p_values.rise == pytest.approx(fisher_exact(table, alternative="greater").pvalue)


@pytest.mark.parametrize(("baseline", "candidate"), P_VALUE_FIXTURES)
def test_drop_p_value_is_the_hypergeometric_left_tail(baseline, candidate):
    expected = hypergeometric_left_tail(*candidate, *baseline)
    assert case(baseline, candidate).p_value_drop == pytest.approx(expected)


def test_p_values_against_hand_computed_hypergeometric_values():
    # 3/3 → 0/3: the 3 passes all land in the baseline's 3 of 6 runs: 1 / C(6, 3) = 1/20.
    assert case((3, 3), (0, 3)).p_value_drop == pytest.approx(1 / 20)
    # 5/5 → 1/5: only k = 1 is possible with 4 fails: C(6,1)·C(4,4) / C(10,5) = 6/252.
    assert case((5, 5), (1, 5)).p_value_drop == pytest.approx(6 / 252)
    # 1/3 → 3/3, rising: all 3 candidate runs among the 4 passes: C(4,3) / C(6,3) = 4/20.
    assert case((1, 3), (3, 3)).p_value_rise == pytest.approx(4 / 20)


@pytest.mark.parametrize("fail_on", ["regression", "likely_regression"])
@pytest.mark.parametrize("runs", range(1, 31))
def test_gate_reach_without_scipy_agrees_with_scipy_s_surest_drop(fail_on, runs):
    # validate predicts from 1 / C(2n, n); a run compares with SciPy's Fisher test
    reach = gate_reach(fail_on, runs)
    by_scipy = compare_case("", [True] * runs, [False] * runs)
    assert reach.surest_drop_p_value == pytest.approx(by_scipy.p_value_drop, rel=1e-12)
    assert reach.reachable == fails_gate(by_scipy.verdict, fail_on)
    assert reach.fewest_runs == {"regression": 4, "likely_regression": 2}[fail_on]


# --- Wilson interval ------------------------------------------------------------------------


@pytest.mark.parametrize(("passed", "runs"), [(0, 5), (5, 5), (3, 10), (1, 3), (47, 100), (0, 1)])
def test_wilson_interval_matches_the_score_formula(passed, runs):
    lower, upper = wilson_by_hand(passed, runs)
    interval = wilson_interval(passed, runs)
    assert interval is not None
    assert interval.lower == pytest.approx(lower, rel=1e-6, abs=1e-9)
    assert interval.upper == pytest.approx(upper, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("runs", [1, 2, 3, 5, 8, 13, 40, 101, 1000])
def test_wilson_interval_is_scipy_s_wilson_interval(runs):
    for passed in range(runs + 1):
        by_scipy = binomtest(passed, runs).proportion_ci(confidence_level=0.95, method="wilson")
        interval = wilson_interval(passed, runs)
        assert interval is not None
        assert interval.lower == pytest.approx(by_scipy.low, rel=1e-12, abs=1e-15)
        assert interval.upper == pytest.approx(by_scipy.high, rel=1e-12, abs=1e-15)


def test_wilson_interval_pins_the_bounds_at_zero_and_all_passing():
    assert wilson_interval(0, 5).lower == pytest.approx(0.0, abs=1e-12)
    assert wilson_interval(5, 5).upper == pytest.approx(1.0, abs=1e-12)
    # 0/5: upper = z²/n / (1 + z²/n), the centre plus a half-width of the same size.
    z2n = Z_95**2 / 5
    assert wilson_interval(0, 5).upper == pytest.approx(z2n / (1 + z2n), rel=1e-6)


def test_wilson_interval_needs_runs():
    assert wilson_interval(0, 0) is None


# --- verdict tiers ------------------------------------------------------------------------


def test_regression_from_a_reliable_baseline():
    result = case((5, 5), (1, 5))  # p = 6/252, drop 80 points, baseline 100%
    assert result.verdict == "regression"
    assert (result.baseline.passed, result.baseline.runs) == (5, 5)
    assert (result.candidate.rate, result.delta) == (pytest.approx(0.2), pytest.approx(-0.8))


def test_regression_at_exactly_30_points():
    # 20/20 → 14/20: p = C(34,14)·C(6,6) / C(40,20) ≈ 0.0101, drop exactly 30 points.
    assert case((20, 20), (14, 20)).p_value_drop == pytest.approx(
        math.comb(34, 14) / math.comb(40, 20)
    )
    assert case((20, 20), (14, 20)).verdict == "regression"


def test_regression_at_exactly_70_percent_baseline_and_30_points():
    # 0.7 − 0.4 is 0.2999… in floats: the gates compare exact fractions.
    assert case((70, 100), (40, 100)).verdict == "regression"
    assert case((7, 10), (0, 10)).verdict == "regression"


def test_drop_just_under_30_points_is_not_a_regression():
    # 100/100 → 71/100: p is tiny but the drop is 29 points.
    result = case((100, 100), (71, 100))
    assert result.p_value_drop < 0.05
    assert result.verdict == "likely_regression"


def test_likely_regression_when_p_is_exactly_the_hard_cut_off():
    # 3/3 → 0/3 gives p = 1/20 exactly: not below 0.05, but below 0.20.
    assert case((3, 3), (0, 3)).verdict == "likely_regression"


def test_likely_regression_at_exactly_15_points():
    # 20/20 → 17/20: p = C(20,3) / C(40,3) ≈ 0.115 (all 3 fails in the candidate's half).
    result = case((20, 20), (17, 20))
    assert result.p_value_drop == pytest.approx(math.comb(20, 3) / math.comb(40, 3))
    assert result.verdict == "likely_regression"


def test_likely_regression_needs_a_half_passing_baseline():
    # 10/20 → 5/20 is a 25-point drop with p < 0.20 on a 50% baseline; 9/20 → 4/20 is not.
    assert case((10, 20), (5, 20)).p_value_drop < 0.20
    assert case((10, 20), (5, 20)).verdict == "likely_regression"
    assert case((9, 20), (4, 20)).p_value_drop < 0.20
    assert case((9, 20), (4, 20)).verdict == "stable"


def test_unreliable_baseline_for_a_confident_drop_on_a_flaky_baseline():
    # 4/10 → 0/10: p = C(16,10) / C(20,10) ≈ 0.043, drop 40 points, baseline 40%.
    result = case((4, 10), (0, 10))
    assert result.p_value_drop == pytest.approx(math.comb(16, 10) / math.comb(20, 10))
    assert result.verdict == "unreliable_baseline"


def test_unreliable_baseline_comes_before_likely_regression():
    # 6/10 → 0/10 also meets the likely tier (60% ≥ 50%), but the seed does not flag it.
    assert case((6, 10), (0, 10)).verdict == "unreliable_baseline"


def test_improvement_skips_the_reliability_gate():
    result = case((0, 5), (5, 5))  # p_rise = 1/C(10,5), baseline 0%
    assert result.p_value_rise == pytest.approx(1 / 252)
    assert result.verdict == "improvement"


def test_significant_rise_under_30_points_is_not_an_improvement():
    # 0/100 → 20/100 is significant but a 20-point rise: stable.
    assert case((0, 100), (20, 100)).p_value_rise < 0.05
    assert case((0, 100), (20, 100)).verdict == "stable"


def test_worth_watching_for_large_moves_that_are_not_significant():
    assert case((1, 3), (3, 3)).verdict == "worth_watching"  # +67 points, p_rise = 0.2
    assert case((3, 3), (1, 3)).verdict == "worth_watching"  # −67 points, p_drop = 0.2


def test_worth_watching_at_exactly_35_points():
    # 8/20 → 3/4 rises and 12/20 → 1/4 drops exactly 35 points, neither with p < 0.20.
    for baseline, candidate in (((8, 20), (3, 4)), ((12, 20), (1, 4))):
        result = case(baseline, candidate)
        assert min(result.p_value_drop, result.p_value_rise) > 0.20
        assert abs(result.delta) == pytest.approx(0.35)
        assert result.verdict == "worth_watching"
    assert case((33, 100), (2, 3)).verdict == "stable"  # 33.7 points


def test_stable_for_small_moves():
    assert case((3, 3), (2, 3)).verdict == "stable"
    assert case((7, 9), (7, 9)).verdict == "stable"


def test_insufficient_data_without_runs_on_either_side():
    for result in (case((0, 0), (2, 3)), case((2, 3), (0, 0))):
        assert result.verdict == "insufficient_data"
        assert (result.delta, result.p_value_drop, result.p_value_rise) == (None, None, None)
    assert case((0, 0), (2, 3)).baseline.rate is None


# --- failure categories and drift -----------------------------------------------------------


def metric(name="m", score=0.0, success=False, error_kind=None):
    return MetricRun(metric=name, score=score, success=success, error_kind=error_kind)


def failed(*error_kinds):
    """A failed run, one metric per error kind (None for a score below its threshold)."""
    return RunOutcome(
        passed=False,
        metrics=tuple(metric(f"m{i}", error_kind=kind) for i, kind in enumerate(error_kinds)),
    )


PASSED = RunOutcome(passed=True, metrics=(metric(success=True, score=1.0),))


def test_every_error_kind_has_one_failure_category():
    assert set(FAILURE_CATEGORY_OF_ERROR_KIND) == set(get_args(ErrorKind))
    assert set(FAILURE_CATEGORY_OF_ERROR_KIND.values()) <= set(FAILURE_CATEGORIES)


def test_run_failure_categories():
    assert run_failure_categories(failed("target_error", None, "judge_unavailable")) == {
        "target_error",
        "below_threshold",
        "judge_error",
    }
    assert run_failure_categories(failed("timeout", "timeout")) == {"timeout"}
    # A metric that passed in a failed run is not a reason.
    mixed = RunOutcome(
        passed=False, metrics=(metric(success=True), metric(error_kind="worker_crash"))
    )
    assert run_failure_categories(mixed) == {"worker_crash"}
    # A run that passed under its rule has no failure category, even with a failing metric.
    assert run_failure_categories(RunOutcome(passed=True, metrics=(metric(),))) == frozenset()


def test_unknown_error_kind_is_refused():
    with pytest.raises(ValueError, match="no failure category"):
        run_failure_categories(failed("cosmic_rays"))


def drift_of(category, baseline, candidate):
    return {d.category: d for d in failure_drift(baseline, candidate)}[category]


def test_drift_with_a_rate_move_but_scaled_count_change_under_3_is_not_notable():
    # Baseline 1 of 10 runs (10%), candidate 5 of 30 (16.7%): +6.7 points, 4 more runs,
    # but 30 runs predict 3 anyway, so only 2 beyond scaling.
    result = drift_of(
        "judge_error",
        [failed("judge_error")] + [PASSED] * 9,
        [failed("judge_error")] * 5 + [PASSED] * 25,
    )
    assert (result.baseline_count, result.candidate_count) == (1, 5)
    assert result.rate_delta == pytest.approx(5 / 30 - 1 / 10)
    assert result.expected_candidate_count == pytest.approx(3.0)
    assert result.notable is False


def test_drift_with_a_rate_move_and_scaled_count_change_of_3_or_more_is_notable():
    # Baseline 2 of 10 (20%), candidate 4 of 50 (8%): −12 points; only 2 more raw,
    # but 50 runs predict 10, so 6 fewer than scaling.
    result = drift_of(
        "timeout", [failed("timeout")] * 2 + [PASSED] * 8, [failed("timeout")] * 4 + [PASSED] * 46
    )
    assert result.rate_delta == pytest.approx(4 / 50 - 2 / 10)
    assert result.expected_candidate_count == pytest.approx(10.0)
    assert result.notable is True


def test_drift_at_exactly_5_points_and_3_runs_is_notable():
    # 0 of 60 → 3 of 60: exactly 5 points and exactly 3 runs.
    result = drift_of("below_threshold", [PASSED] * 60, [failed(None)] * 3 + [PASSED] * 57)
    assert result.notable is True


def test_drift_under_5_points_is_not_notable_however_many_runs():
    result = drift_of(
        "target_error",
        [failed("target_error")] * 10 + [PASSED] * 90,
        [failed("target_error")] * 14 + [PASSED] * 86,
    )
    assert result.rate_delta == pytest.approx(0.04)
    assert result.notable is False


def test_drift_lists_every_category_and_needs_runs_on_both_sides():
    drift = failure_drift([failed("missing_input")], [PASSED])
    assert tuple(d.category for d in drift) == FAILURE_CATEGORIES
    assert failure_drift([], [PASSED]) == ()


# --- metric deltas and the whole comparison -------------------------------------------------


def test_metric_deltas_compare_mean_score_and_pass_rate_per_label():
    baseline = [
        RunOutcome(passed=True, metrics=(metric("a", 0.9, True), metric("b", 0.4, False))),
        RunOutcome(passed=False, metrics=(metric("a", 0.5, False),)),
    ]
    candidate = [
        RunOutcome(passed=False, metrics=(metric("a", 0.3, False),)),
        RunOutcome(passed=False, metrics=(metric("a", None, False, "judge_error"),)),
        RunOutcome(passed=True, metrics=(metric("c", 1.0, True),)),
    ]
    by_label = {d.metric: d for d in metric_deltas(baseline, candidate)}
    assert list(by_label) == ["a", "b", "c"]
    a = by_label["a"]
    assert (a.baseline.results, a.candidate.results) == (2, 2)
    assert a.baseline.mean_score == pytest.approx(0.7)
    assert a.candidate.mean_score == pytest.approx(0.3)  # the errored result has no score
    assert a.mean_score_delta == pytest.approx(0.3 - 0.7)
    assert (a.baseline.pass_rate, a.candidate.pass_rate) == (0.5, 0.0)
    assert a.pass_rate_delta == pytest.approx(-0.5)
    assert by_label["b"].candidate.results == 0
    assert (by_label["b"].mean_score_delta, by_label["b"].pass_rate_delta) == (None, None)
    assert by_label["c"].baseline.mean_score is None


def runs(passed, total):
    """Runs of one case, all scoring metric "m"; the failures fall below its threshold."""
    return [PASSED] * passed + [RunOutcome(passed=False, metrics=(metric(),))] * (total - passed)


def test_compare_versions_puts_it_all_together():
    baseline = {"r1": runs(5, 5), "r2": runs(3, 3), "r3": runs(2, 2), "gone": runs(1, 1)}
    candidate = {"r1": runs(1, 5), "r2": runs(3, 3), "r3": runs(0, 2), "new": runs(0, 4)}
    result = compare_versions(baseline, candidate)

    verdicts = {c.row_id: c.verdict for c in result.cases}
    assert verdicts == {
        "gone": "insufficient_data",
        "new": "insufficient_data",
        "r1": "regression",
        "r2": "stable",
        "r3": "likely_regression",  # 2/2 → 0/2: p = 1/C(4,2) = 1/6
    }
    assert result.cases[0].row_id == "gone"  # sorted by row id
    assert result.verdict_counts == {
        "regression": 1,
        "likely_regression": 1,
        "unreliable_baseline": 0,
        "improvement": 0,
        "worth_watching": 0,
        "stable": 1,
        "insufficient_data": 2,
    }
    assert tuple(result.verdict_counts) == VERDICTS

    # Overall over the cases both versions ran: 10/10 → 4/10.
    assert (result.baseline_overall.passed, result.baseline_overall.runs) == (10, 10)
    assert (result.candidate_overall.passed, result.candidate_overall.runs) == (4, 10)
    assert result.overall_delta == pytest.approx(-0.6)
    lower, upper = wilson_by_hand(4, 10)
    assert result.candidate_overall.interval.lower == pytest.approx(lower, rel=1e-6)
    assert result.candidate_overall.interval.upper == pytest.approx(upper, rel=1e-6)

    # Metric deltas over the shared cases; drift over every run (11 vs 14).
    (m,) = result.metric_deltas
    assert (m.baseline.results, m.candidate.results) == (10, 10)
    below = {d.category: d for d in result.failure_drift}["below_threshold"]
    assert (below.baseline_count, below.candidate_count) == (0, 10)
    assert below.candidate_rate == pytest.approx(10 / 14)
    assert below.notable is True


def test_compare_versions_without_regressions_or_runs():
    result = compare_versions({"r": runs(2, 3)}, {"r": runs(3, 3)})
    assert result.verdict_counts["stable"] == 1
    empty = compare_versions({}, {})
    assert empty.cases == () and empty.failure_drift == () and empty.metric_deltas == ()
    assert empty.baseline_overall.interval is None and empty.overall_delta is None


def test_only_the_metrics_that_decide_a_run_explain_its_failure():
    run = RunOutcome(
        passed=False,
        metrics=(
            MetricRun(metric="helpfulness", score=0.2, success=False),
            MetricRun(
                metric="loops", score=None, success=False, error_kind="missing_input", counted=False
            ),
        ),
    )
    assert run_failure_categories(run) == frozenset({"below_threshold"})
