"""The matrix of a workflow and its variants, as compare --variants and the report read it."""

import pytest
from scipy.stats import binomtest

from n8n_deepeval_pipeline.console.variant_table import render_variant_matrix, variant_matrix_json
from n8n_deepeval_pipeline.summary.variant_matrix import variant_matrix
from n8n_deepeval_pipeline.tables.comparison import StoredVersions
from n8n_deepeval_pipeline.tables.rows import AgentOutput, ExpandedRun, RunAggregate
from tests.tables.factories import metric_score

BASE, NANO, TERSE = "b" * 64, "a" * 64, "e" * 64
ROWS = ("r1", "r2", "r3")


def version(digest, passes, tokens, cost, latencies, arena_wins=None):
    """Three rows × four runs; ``passes``: row → how many of its runs pass."""
    runs, aggregates, scores, outputs = [], [], [], []
    for row in ROWS:
        for index in range(4):
            run_id = f"{digest}:{row}:{index}"
            passed = index < passes[row]
            runs.append(ExpandedRun(workflow_hash=digest, run_id=run_id, case_id=run_id[:-2],
                                    run_index=index, row_id=row, run_name="demo"))  # fmt: skip
            aggregates.append(RunAggregate(
                workflow_hash=digest, run_id=run_id, case_id=run_id[:-2],
                overall_score=1.0 if passed else 0.0, raw_mean_score=None,
                overall_success=passed, pass_rule="allPass", metrics_passed=int(passed),
                metrics_counted=1, metric_errors=0, judge_calls=0, tokens=0, cost_usd=None,
                metrics=[],
            ))  # fmt: skip
            scores.append(metric_score(run_id, "exact", 1.0 if passed else 0.0, passed))
            if arena_wins is not None:
                won = index < arena_wins[row]
                scores.append(metric_score(run_id, "helpful", float(won), won))
            outputs.append(AgentOutput(
                workflow_hash=digest, run_id=run_id, actual_output="x",
                latency_s=latencies[index], llm_prompt_tokens=tokens, llm_completion_tokens=0,
                llm_tokens_estimated=False, llm_cost_usd=cost,
                llm_usage=[{"node": "Model", "model": "m", "calls": 1, "prompt_tokens": tokens,
                            "completion_tokens": 0, "estimated": False, "cost_usd": cost}],
            ))  # fmt: skip
    return runs, aggregates, scores, outputs


def family_matrix():
    """The workflow and two variants: nano (cheaper, drops r2), terse (unpriced, passes all)."""
    base = version(BASE, {"r1": 4, "r2": 4, "r3": 2}, 1000, 0.004, [1.0, 1.0, 2.0, 3.0])
    nano = version(
        NANO, {"r1": 4, "r2": 0, "r3": 2}, 400, 0.001, [0.5] * 4, {"r1": 3, "r2": 0, "r3": 1}
    )
    terse = version(
        TERSE, {"r1": 4, "r2": 4, "r3": 4}, 800, None, [0.8] * 4, {"r1": 4, "r2": 2, "r3": 2}
    )
    parts = [base, nano, terse]
    stored = StoredVersions(*([row for part in parts for row in part[i]] for i in range(3)))
    outputs = [output for part in parts for output in part[3]]
    members = [("base", BASE), ("nano", NANO), ("terse", TERSE)]
    return variant_matrix(
        "demo", members, stored, outputs, ["exact", "helpful"], {"helpful": "base"}
    )


def test_each_version_has_its_pass_rate_interval_spend_latency_and_verdicts(matrix):
    base, nano, terse = matrix.rows
    assert (base.pass_rate.passed, base.pass_rate.runs) == (10, 12)
    wilson = binomtest(10, 12).proportion_ci(method="wilson")  # SciPy's Wilson 95% interval
    assert base.pass_rate.interval.lower == pytest.approx(wilson.low)
    assert (base.tokens_per_run, base.cost_per_run_usd) == (1000, pytest.approx(0.004))
    # twelve runs at 1, 1, 2, 3 s: the 95th percentile lies between two 3 s runs
    assert (base.latency_p50_s, base.latency_p95_s) == (1.5, 3.0)
    assert base.cases is None and base.verdict_counts is None
    # nano drops every run of r2 (4/4 → 0/4): Fisher p = 1/70 < 0.05, 100 points from 100%
    (r2,) = [case for case in nano.cases if case.row_id == "r2"]
    assert r2.verdict == "regression" and r2.p_value_drop == pytest.approx(1 / 70)
    assert nano.verdict_counts["regression"] == 1 and nano.verdict_counts["stable"] == 2
    # terse has a model without a price: its cost is unknown, not zero
    assert terse.cost_per_run_usd is None and terse.unpriced_models == ["m"]


def test_a_head_to_head_metric_is_a_win_rate_with_its_interval(matrix):
    helpful = {row.name: row.metrics[1] for row in matrix.rows}
    assert helpful["base"].results == 0  # the opponent plays no game against itself
    assert (helpful["nano"].wins, helpful["nano"].results) == (4, 12)
    assert helpful["nano"].pass_rate == pytest.approx(1 / 3)
    wilson = binomtest(4, 12).proportion_ci(method="wilson")
    assert helpful["nano"].interval.upper == pytest.approx(wilson.high)
    assert (helpful["terse"].wins, helpful["terse"].against) == (8, "base")


def test_the_frontier_is_what_no_priced_version_beats_on_cost_and_pass_rate(matrix):
    frontier = {row.name: row.frontier for row in matrix.rows}
    # base passes more (10/12 against 6/12), nano costs less: neither beats the other;
    # terse passes most but has no price, so it cannot be placed
    assert frontier == {"base": True, "nano": True, "terse": False}


def test_the_printed_matrix_and_its_json(matrix):
    text = render_variant_matrix(matrix)
    assert text.splitlines()[0] == "demo: the workflow bbbbbbbbbbbb and its 2 variants"
    assert "frontier (no other costs less per run and passes more): base, nano" in text
    lines = {line.split()[0]: line for line in text.splitlines() if line[:5] in ("base ", "nano ")}
    assert "83.3% [55.2%, 95.3%] 10/12" in lines["base"]
    assert "33% [14%, 61%] 4/12" in lines["nano"]
    assert "$0.00100 " in lines["nano"] and lines["nano"].rstrip().endswith("*")
    assert "unpriced" in text  # terse
    assert "  nano: regression 1 · stable 2" in text
    case_line = next(line for line in text.splitlines() if line.startswith("r2 "))
    assert case_line.split() == ["r2", "4/4", "0/4", "regression", "4/4", "stable"]
    printed = variant_matrix_json(matrix)
    assert printed["frontier"] == ["base", "nano"]
    assert [v["key"] for v in printed["versions"]] == ["b" * 12, "a" * 12, "e" * 12]


@pytest.fixture
def matrix():
    return family_matrix()
