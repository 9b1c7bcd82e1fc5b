"""What the UI shows and charts of a materialisation: true figures, rounded, nothing made up."""

from typing import ClassVar

from n8n_deepeval_pipeline.orchestration.assets import _comparison_metadata, _consistency_metadata
from n8n_deepeval_pipeline.orchestration.chunked_scoring import _pool_metadata, summary_metadata
from n8n_deepeval_pipeline.tables.rows import MetricScore
from n8n_deepeval_pipeline.tables.scoring_chunks import ChunkScores

HASH = "a" * 64


def score(run: int, dry_run: bool, cost_usd: float | None, tokens: int = 0) -> MetricScore:
    return MetricScore(
        workflow_hash=HASH, run_id=f"{HASH}:r:{run}", case_id=f"{HASH}:r",
        metric="helpfulness", metric_slug="g_eval", score=1.0, threshold=0.5, success=True,
        direction="higher_is_better", reason=None, error=None, error_kind=None,
        judge="dry-run" if dry_run else "openai:gpt-4o-mini", dry_run=dry_run, judge_calls=1,
        judge_retries=0, cached_calls=0, prompt_tokens=0, completion_tokens=0, tokens=tokens,
        cost_usd=cost_usd, latency_s=0.0,
    )  # fmt: skip


def test_a_dry_run_charts_no_cost_and_no_tokens_and_a_priced_judge_both():
    dry = summary_metadata([score(run, True, None) for run in range(3)])
    assert "cost_usd" not in dry and "tokens" not in dry  # the report says "—", not 0
    priced = summary_metadata([score(run, False, 0.1, tokens=7) for run in range(3)])
    assert priced["cost_usd"].value == 0.3  # 0.30000000000000004 summed
    assert priced["tokens"].value == 21


def test_one_pool_that_scored_two_chunks_is_counted_once():
    pool = {"workers": 4, "replacements": 1, "rss_mb_total": 800.0, "warmup_s": 2.5}
    later = {**pool, "replacements": 2, "rss_mb_total": 820.0, "process": 11}
    chunks = [
        ChunkScores("c0", [], 1, 0, {**pool, "process": 11}),
        ChunkScores("c1", [], 1, 0, later),
    ]
    assert _pool_metadata(chunks) == {
        "pool/replacements": 2,
        "pool/rss_mb_total": 820.0,
        "pool/warmup_s": 2.5,
        "pool/workers": 4,
    }
    # two step processes, a pool each, add up
    other = ChunkScores("c2", [], 1, 0, {**pool, "process": 12})
    assert _pool_metadata([*chunks, other])["pool/workers"] == 8


def test_consistency_means_are_rounded_and_absent_when_unknown():
    assert _consistency_metadata([]) == {"cases": 0}


class ComparisonStandIn:
    """The two figures of a VersionComparison the metadata reads."""

    overall_delta = 0.375 - 0.5000000000000001  # -0.12500000000000006, a float sum's noise
    verdict_counts: ClassVar = {"stable": 7, "likely_regression": 2}


def test_the_comparison_names_its_baseline_once_and_its_delta_rounded():
    metadata = _comparison_metadata(ComparisonStandIn(), "f7ee35b359b4" + "0" * 52)
    assert metadata["run_pass_rate_delta"].value == -0.125
    assert metadata["baseline"] == "f7ee35b359b4"
    assert "baseline_hash" not in metadata
    assert metadata["verdicts/likely_regression"] == 2


def test_rates_and_scores_read_to_four_figures_in_the_ui():
    """136 of 189 scores pass: 0.7196 in the UI, not 0.7195767195767195."""
    scores = [score(run, False, 0.001) for run in range(189)]
    failing = [s.model_copy(update={"success": False, "score": 1 / 3}) for s in scores[136:]]
    metadata = summary_metadata(scores[:136] + failing)
    assert metadata["score_pass_rate"].value == 0.7196
    assert metadata["mean_score/helpfulness"].value == 0.8131  # (136 + 53/3) / 189
    assert metadata["cost_usd"].value == 0.189  # costs keep their millionths of a dollar


def test_every_figure_is_rounded_the_one_way_and_a_tiny_one_keeps_its_size():
    from n8n_deepeval_pipeline.orchestration.metadata_figures import shown

    rounded = shown(
        {
            "p_value_drop": 0.000012345678,
            "rate": 2 / 3,
            "cost_usd/openai:gpt-4o": 0.12345678,
            "rows": 7,
            "dry_run": True,
            "label": "x",
        }
    )
    assert rounded == {
        "p_value_drop": 1.235e-05,
        "rate": 0.6667,
        "cost_usd/openai:gpt-4o": 0.123457,
        "rows": 7,
        "dry_run": True,
        "label": "x",
    }


def test_each_judged_metrics_standing_is_in_the_aggregates_metadata():
    from n8n_deepeval_pipeline.calibration.status import MetricCalibration
    from n8n_deepeval_pipeline.orchestration.calibration_gate import calibration_metadata

    def standing(metric, state, kappa, gated):
        return MetricCalibration(
            metric=metric, state=state, labels=40, needed=0, kappa=kappa, kappa_low=None,
            kappa_high=None, min_kappa=0.6, gated=gated, why=f"{metric} why",
        )  # fmt: skip

    metadata = calibration_metadata(
        [
            standing("helpfulness", "calibrated", 0.81234, False),
            standing("bias", "uncalibrated", 0.1, True),
        ],
        "support_agent",
    )
    assert metadata["uncalibrated_metrics"] == "bias"
    assert metadata["metrics_deciding_no_run"] == "bias"
    assert metadata["calibration/bias"] == "uncalibrated: bias why"
    assert metadata["calibration/helpfulness/kappa"].value == 0.8123  # rounded as every figure
    # bias needs labels: the review page is where they are given
    assert metadata["review_url"].value.endswith("/benchmarks/support_agent/review")
    calibrated = [standing("helpfulness", "calibrated", 0.9, False)]
    assert "review_url" not in calibration_metadata(calibrated, "support_agent")
