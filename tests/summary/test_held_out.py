"""The held-out verdict: pooled runs compared with Fisher's exact test, adopted by adoptWhen."""

from scipy.stats import fisher_exact

from n8n_deepeval_pipeline.statistics.version_comparison import (
    OverallPassRate,
    wilson_interval,
)
from n8n_deepeval_pipeline.summary.held_out import held_out_proof, render_held_out
from n8n_deepeval_pipeline.summary.variant_matrix import MatrixRow, VariantMatrix


def row(name: str, passed: int, runs: int) -> MatrixRow:
    rate = OverallPassRate(passed=passed, runs=runs, rate=passed / runs,
                           interval=wilson_interval(passed, runs))  # fmt: skip
    return MatrixRow(name=name, workflow_hash=name * 4, pass_rate=rate, metrics=[],
                     measured_runs=runs, tokens_per_run=30.0, cost_per_run_usd=1e-5,
                     unpriced_models=[], tokens_estimated=False, latency_p50_s=None,
                     latency_p95_s=None, frontier=False, cases=[], verdict_counts={})  # fmt: skip


def matrix(base: tuple[int, int], candidate: tuple[int, int]) -> VariantMatrix:
    rows = [row("base", *base), row("optimized", *candidate)]
    return VariantMatrix(benchmark="b", base_hash="base" * 4, metrics=[], rows=rows)


def test_the_verdict_is_fishers_one_sided_test_on_the_pooled_runs():
    proof = held_out_proof(matrix((1, 6), (6, 6)), "optimized", ["a", "b", "c"], 2, "significant")
    expected = fisher_exact([[6, 0], [1, 5]], alternative="greater").pvalue
    assert proof.p_value_rise == expected < 0.05
    assert (proof.verdict, proof.adopted) == ("significant_improvement", True)
    assert "verdict: a significant improvement" in render_held_out(proof)


def test_a_candidate_not_proven_better_is_reported_not_adopted():
    slight = held_out_proof(matrix((3, 6), (4, 6)), "optimized", ["a"], 6, "significant")
    assert (slight.verdict, slight.adopted) == ("improvement", False)
    assert held_out_proof(matrix((3, 6), (4, 6)), "optimized", ["a"], 6, "better").adopted
    same = held_out_proof(matrix((3, 6), (3, 6)), "optimized", ["a"], 6, "better")
    worse = held_out_proof(matrix((4, 6), (1, 6)), "optimized", ["a"], 6, "better")
    assert (same.verdict, same.adopted, worse.verdict, worse.adopted) == (
        "no_change", False, "worse", False)  # fmt: skip
