"""The checks of ``metric_scores``: ``error_rate`` says what the version's outcome says."""

import pytest

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.orchestration.chunked_scoring import score_checks
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_INCOMPLETE
from n8n_deepeval_pipeline.summary.gate import version_gate
from n8n_deepeval_pipeline.summary.outcome import Limits, version_outcome
from n8n_deepeval_pipeline.summary.run_summary import summarise
from tests.conftest import EXAMPLE
from tests.test_cli_exit_codes import CURRENT, JUDGED, OLDER, OUTAGE, score

BENCHMARK = load_benchmark(EXAMPLE / "benchmark.yaml")
BENCHMARK_LIMITS = Limits.of(BENCHMARK.checks.max_error_rate)  # 5%
# 3 of 40 scores without a judgement (7.5%), none for an outage: over 5%, within 10%
UNJUDGED = JUDGED[:37] + [score(run, "judge_error", "HTTP 500") for run in (37, 38, 39)]


def _error_rate(scores, limits):
    (check,) = [
        c for c in score_checks(BENCHMARK, scores, 40, limits) if c.check_name == "error_rate"
    ]
    return check


def _run_exit_code(scores, limits):
    """What ``run`` exits with for a version that left ``scores``, from its outcome."""
    summary = summarise(BENCHMARK.name, CURRENT, scores, [], [], [])
    gate = version_gate(BENCHMARK.compare.fail_on, OLDER, [])
    return version_outcome(summary, gate, None, limits).exit_codes.run


@pytest.mark.parametrize(
    ("scores", "limits", "exit_code"),
    [
        (JUDGED, BENCHMARK_LIMITS, 0),
        # a judge outage within checks.maxErrorRate (2 of 40): run exits 3, the check fails
        (OUTAGE, BENCHMARK_LIMITS, EXIT_INCOMPLETE),
        # --max-error-rate makes an outage one share like others: 5% is within 10%
        (OUTAGE, Limits.of(0.05, max_error_rate=0.1), 0),
        (UNJUDGED, BENCHMARK_LIMITS, EXIT_INCOMPLETE),
        (UNJUDGED, Limits.of(0.05, max_error_rate=0.1), 0),
    ],
    ids=["complete", "outage", "outage-allowed", "over-limit", "within-given-limit"],
)
def test_the_error_rate_check_fails_exactly_when_run_exits_3(scores, limits, exit_code):
    assert _run_exit_code(scores, limits) == exit_code
    assert _error_rate(scores, limits).passed == (exit_code != EXIT_INCOMPLETE)


def test_the_error_rate_check_charts_its_figures_and_says_why_run_exits_3():
    metadata = {k: v.value for k, v in _error_rate(OUTAGE, BENCHMARK_LIMITS).metadata.items()}
    assert metadata == {
        "unjudged": 2,
        "unjudged_rate": 0.05,
        "judge_outage": 2,
        "failed_target_calls": 0,
        "failed_target_call_rate": 0.0,
        "max_error_rate": 0.05,
        "incomplete": "2 of 40 scores have no judgement: the judge was unavailable for 2 "
        "(--max-error-rate sets how many unjudged scores are acceptable)",
    }
    complete = _error_rate(JUDGED, BENCHMARK_LIMITS).metadata
    assert complete["incomplete"].value == "no"
