"""What `compare` prints: the p-value in the direction of the change, and its JSON."""

import pytest
from scipy.stats import fisher_exact

from n8n_deepeval_pipeline.console.comparison import comparison_json, render_comparison
from n8n_deepeval_pipeline.statistics.version_comparison import (
    MetricRun,
    RunOutcome,
    cases_failing_gate,
    compare_versions,
)
from n8n_deepeval_pipeline.summary.gate import version_gate
from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome

BASELINE, CANDIDATE = "a" * 64, "b" * 64


def outcome(fail_on, flagged, runs=18):
    """The candidate's outcome against BASELINE (complete, no red team)."""
    return VersionOutcome(
        benchmark="b",
        workflow_hash=CANDIDATE,
        runs=runs,
        pass_rate=0.5,
        gate=version_gate(fail_on, BASELINE, flagged),
        limits=Limits.of(0.05),
    )


def runs(passed, total):
    """``passed`` passing runs of ``total``; the others failed their one metric."""
    below = (MetricRun(metric="m", score=0.0, success=False),)
    return [
        RunOutcome(passed=True) if index < passed else RunOutcome(passed=False, metrics=below)
        for index in range(total)
    ]


# rises 1/6 → 6/6, drops 6/6 → 1/6, stays 3/6
COMPARISON = compare_versions(
    {"up": runs(1, 6), "down": runs(6, 6), "flat": runs(3, 6)},
    {"up": runs(6, 6), "down": runs(1, 6), "flat": runs(3, 6)},
)


def _one_sided(candidate, baseline, alternative):
    table = [[candidate, 6 - candidate], [baseline, 6 - baseline]]
    return fisher_exact(table, alternative=alternative).pvalue


def test_each_case_shows_the_p_value_in_the_direction_it_moved():
    lines = render_comparison(COMPARISON, BASELINE, CANDIDATE).splitlines()
    assert lines[4] == "case  baseline  candidate   delta      p  verdict"
    rise, drop = _one_sided(6, 1, "greater"), _one_sided(1, 6, "less")
    assert rise == pytest.approx(drop) == pytest.approx(7 / 924)  # 1 − p(drop) would be ~1
    assert lines[5:8] == [
        f"down       6/6        1/6   -83.3  {drop:.3f}  regression",
        f"flat       3/6        3/6    +0.0  {_one_sided(3, 3, 'less'):.3f}  stable",
        f"up         1/6        6/6   +83.3  {rise:.3f}  improvement",
    ]


def test_json_has_the_verdict_table_intervals_and_drift():
    flagged = cases_failing_gate(COMPARISON, "regression")
    printed = comparison_json(COMPARISON, BASELINE, CANDIDATE, outcome("regression", flagged))
    assert (printed["baseline"], printed["candidate"]) == ("a" * 12, "b" * 12)
    gate = printed["outcome"]["gate"]
    assert (gate["fail_on"], gate["flagged_cases"]) == (
        "regression",
        ["down"],
    )
    cases = {case["row_id"]: case for case in printed["result"]["cases"]}
    assert cases["up"]["p_value"] == pytest.approx(_one_sided(6, 1, "greater"))
    assert cases["up"]["p_value_drop"] == pytest.approx(_one_sided(6, 1, "less"))
    assert cases["down"]["p_value"] == cases["down"]["p_value_drop"]
    assert (cases["down"]["baseline"], cases["down"]["verdict"]) == (
        {"passed": 6, "runs": 6, "rate": 1.0},
        "regression",
    )
    overall = printed["result"]["candidate_overall"]
    assert (overall["passed"], overall["runs"]) == (10, 18)
    assert set(overall["interval"]) == {"lower", "upper"}
    assert printed["result"]["verdict_counts"]["improvement"] == 1
    drift = {row["category"]: row for row in printed["result"]["failure_drift"]}
    assert drift["below_threshold"]["baseline_count"] == 8  # 5 + 0 + 3 failed runs
    assert drift["below_threshold"]["candidate_count"] == 8  # 0 + 5 + 3


def test_every_dump_of_a_case_carries_its_p_value_in_the_direction_it_moved():
    cases = {case.row_id: case.model_dump(mode="json") for case in COMPARISON.cases}
    assert cases["up"]["p_value"] == cases["up"]["p_value_rise"]
    assert cases["down"]["p_value"] == cases["down"]["p_value_drop"]
    assert cases["flat"]["p_value"] == cases["flat"]["p_value_drop"]  # no move: a drop's


def test_has_regression_agrees_with_the_exit_code_of_a_gate_on_likely_regressions():
    """3/3 → 0/3 is a likely regression: compare exits 1 on it, so it has regressed."""
    likely = compare_versions({"x": runs(3, 3)}, {"x": runs(0, 3)})
    flagged = cases_failing_gate(likely, "likely_regression")
    printed = comparison_json(likely, BASELINE, CANDIDATE, outcome("likely_regression", flagged))
    assert printed["outcome"]["gate"] == {
        "fail_on": "likely_regression",
        "baseline": "a" * 12,
        "flagged_cases": ["x"],
        "has_regression": True,
    }
    assert printed["outcome"]["exit_codes"] == {"run": 5, "compare": 1}
    assert "has_regression" not in printed["result"]
    lenient = outcome("regression", cases_failing_gate(likely, "regression"))
    assert comparison_json(likely, BASELINE, CANDIDATE, lenient)["outcome"]["exit_codes"] == {
        "run": 0,
        "compare": 0,
    }


def test_a_simulated_benchmarks_cases_are_named_by_their_scenarios():
    """Each run of a simulated case is a conversation: the case is named by what it is about."""
    scenarios = {
        "down": "A customer wants a refund\nfor order A3301, which arrived broken",
        "up": "A student asks what 3 sleeping bags at 89.50 cost " + "and more " * 20,
    }
    lines = render_comparison(COMPARISON, BASELINE, CANDIDATE, scenarios).splitlines()
    start = lines.index("scenarios (each run of these cases is a simulated conversation):")
    assert (
        lines[start + 1]
        == "  down  A customer wants a refund for order A3301, which arrived broken"
    )
    assert lines[start + 2].startswith("  up    A student asks what 3 sleeping bags at 89.50 cost")
    assert len(lines[start + 2]) <= 2 + 4 + 2 + 100 and lines[start + 2].endswith("and…")
    assert lines[start + 3] == ""  # "flat" has no scenario: not listed
    plain = render_comparison(COMPARISON, BASELINE, CANDIDATE).splitlines()
    assert not any(line.startswith("scenarios") for line in plain)
