"""A judge per metric and judge panels, scored in worker processes by loopback judges:
each judge gets its own requests, cache entries, rate window, breaker and price."""

import sqlite3
import time

import pytest

from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.statistics.judge_panel import combine_panel
from n8n_deepeval_pipeline.summary.run_summary import judge_usage
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.tables.test_metric_judges import PRICES, benchmark, plan_for

pytestmark = pytest.mark.slow


@pytest.fixture
def servers():
    started = []

    def start(**options):
        server = LoopbackJudge(latency_s=0.0, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def judge(server, model):
    return {"provider": "openai-compatible", "model": model, "baseUrl": server.base_url}


def resource(tmp_path, **options):
    return JudgeResource(provider="dry-run", state_dir=str(tmp_path / "judge"), **options)


def score(pool, bench, judges, prices=None, one_at_a_time=False):
    """Every metric of ``bench`` on one run, as rows by metric label."""
    plan = plan_for(bench, judges.spec_for, prices)
    batches = [[task] for task in plan.tasks] if one_at_a_time else [plan.tasks]
    rows = [plan.row_for(result) for batch in batches for result in pool.evaluate(batch)]
    return {row.metric: row for row in rows}


def test_a_metric_with_its_own_judge_is_scored_limited_and_priced_as_that_judge(
    dry_run_pool, servers, tmp_path
):
    a, b = servers(), servers()
    bench = benchmark(
        [
            {"metric": "correctness", "label": "by_benchmark_judge"},
            {"metric": "correctness", "label": "by_own_judge", "judge": judge(b, "judge-b")},
        ],
        judge=judge(a, "judge-a"),
    )
    started = time.perf_counter()
    # one request per minute: a rate window shared by both judges would hold one call 60 s
    rows = score(dry_run_pool, bench, resource(tmp_path, requests_per_minute=1), PRICES)
    assert time.perf_counter() - started < 30
    assert (a.requests, b.requests) == (1, 1)
    mine, theirs = rows["by_own_judge"], rows["by_benchmark_judge"]
    assert (mine.judge, theirs.judge) == ("openai-compatible:judge-b", "openai-compatible:judge-a")
    assert mine.error is None and theirs.error is None
    for row, model in ((mine, "judge-b"), (theirs, "judge-a")):
        assert row.cost_usd == pytest.approx(
            PRICES.cost(model, row.prompt_tokens, row.completion_tokens)
        )
    assert mine.cost_usd > theirs.cost_usd > 0  # judge-b costs ten times as much per token
    usage = {u.judge: (u.judge_calls, u.cost_usd) for u in judge_usage(list(rows.values()))}
    assert usage == {
        "openai-compatible:judge-a": (1, pytest.approx(theirs.cost_usd)),
        "openai-compatible:judge-b": (1, pytest.approx(mine.cost_usd)),
    }


def test_the_cache_keeps_each_judges_answers_apart(dry_run_pool, servers, tmp_path):
    a, b = servers(), servers()
    # the same model name on two servers is two judges
    bench = benchmark(
        [
            {"metric": "correctness", "label": "on_a", "judge": judge(a, "same-model")},
            {"metric": "correctness", "label": "on_b", "judge": judge(b, "same-model")},
        ]
    )
    first = score(dry_run_pool, bench, resource(tmp_path))
    assert (a.requests, b.requests) == (1, 1)
    assert {row.judge_calls for row in first.values()} == {1}
    second = score(dry_run_pool, bench, resource(tmp_path))
    assert (a.requests, b.requests) == (1, 1)  # each answered from its own entry
    assert {(row.judge_calls, row.cached_calls) for row in second.values()} == {(0, 1)}
    with sqlite3.connect(tmp_path / "judge" / "judge.sqlite") as db:
        assert db.execute("select count(*) from cache").fetchone()[0] == 2


def test_a_three_judge_panel_by_majority_and_by_mean(dry_run_pool, servers, tmp_path):
    # judges answering 5/5, 2/5 and 2/5: scores 1.0, 0.4, 0.4 against threshold 0.5
    panel_servers = [servers(fixed={"score": score}) for score in (5, 2, 2)]
    panel = [judge(server, f"judge-{n}") for n, server in zip("abc", panel_servers, strict=True)]
    bench = benchmark(
        [
            {"metric": "correctness", "label": "majority", "judges": panel, "threshold": 0.5},
            {
                "metric": "correctness",
                "label": "mean",
                "judges": panel,
                "panel": "mean",
                "threshold": 0.5,
            },
        ]
    )
    rows = score(dry_run_pool, bench, resource(tmp_path), PRICES)
    majority, mean = rows["majority"], rows["mean"]
    for row in (majority, mean):
        assert [j["score"] for j in row.judge_scores] == [1.0, 0.4, 0.4]
        assert [j["success"] for j in row.judge_scores] == [True, False, False]
        assert row.error_kind is None
    # majority: two of three fail; the score is the mean of their scores
    assert (majority.score, majority.success) == (pytest.approx(0.4), False)
    assert majority.judge_agreement == pytest.approx(2 / 3)
    assert majority.reason.startswith("[majority of 3 judges: 2 of 3 agree]")
    # mean: (1.0 + 0.4 + 0.4) / 3 = 0.6 passes; only judge a agrees with that verdict
    assert (mean.score, mean.success) == (pytest.approx(0.6), True)
    assert mean.judge_agreement == pytest.approx(1 / 3)
    # each judge was asked once: the second metric's question came from that judge's cache
    assert [server.requests for server in panel_servers] == [1, 1, 1]
    assert majority.cost_usd + mean.cost_usd > 0


def test_a_failing_judge_leaves_the_panel_to_the_others_and_opens_only_its_own_breaker(
    dry_run_pool, servers, tmp_path
):
    good = [
        judge(servers(fixed={"score": 5}), "judge-a"),
        judge(servers(fixed={"score": 4}), "judge-b"),
    ]
    broken = servers(fail_always=True)
    bench = benchmark(
        [
            {
                "metric": "correctness",
                "label": "first",
                "judges": [*good, judge(broken, "judge-c")],
            },
            {
                "metric": "helpfulness",
                "label": "second",
                "judges": [*good, judge(broken, "judge-c")],
            },
            {
                "metric": "helpfulness",
                "label": "no_quorum",
                "judges": [good[0], judge(broken, "judge-c"), judge(broken, "judge-d")],
            },
        ]
    )
    judges = resource(tmp_path, max_attempts=2, max_retry_total_s=5, breaker_threshold=1)
    rows = score(dry_run_pool, bench, judges, one_at_a_time=True)
    first, second, no_quorum = rows["first"], rows["second"], rows["no_quorum"]
    # combined from the two that answered (1.0 and 0.8): both pass, so they fully agree
    assert (first.score, first.success, first.error_kind) == (pytest.approx(0.9), True, None)
    assert first.judge_agreement == 1.0
    failed = first.judge_scores[2]
    assert (failed["judge"], failed["score"], failed["error_kind"]) == (
        "openai-compatible:judge-c",
        None,
        "judge_error",
    )
    assert "HTTP 500" in failed["error"]
    assert "judge-c no score (judge_error)" in first.reason
    # judge c's breaker is open now: it fails fast, while judges a and b go on answering
    assert [j["error_kind"] for j in second.judge_scores] == [None, None, "judge_unavailable"]
    assert second.score is not None and second.error_kind is None
    # one judge of three answering is no panel verdict: an unjudged row, every failure named
    assert (no_quorum.score, no_quorum.success) == (None, False)
    assert no_quorum.error_kind in {"judge_error", "judge_unavailable"}
    assert no_quorum.error.startswith("1 of 3 judges answered, a panel needs 2.")
    assert "openai-compatible:judge-d" in no_quorum.error
    assert broken.requests == 2 + 2  # judge c's two attempts, then judge d's two


def test_a_dry_run_panel_runs_a_deepeval_metric_once_per_judge(dry_run_pool, tmp_path):
    panel = [{"provider": "dry-run", "model": name} for name in ("a", "b", "c")]
    bench = benchmark(
        [
            {
                "metric": "g_eval",
                "name": "helpfulness",
                "criteria": "Is the answer correct?",
                "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"],
                "judges": panel,
            }
        ]
    )
    (row,) = score(dry_run_pool, bench, resource(tmp_path)).values()
    assert row.error_kind is None and row.dry_run
    assert row.judge == "dry-run:a, dry-run:b, dry-run:c"
    assert row.reason.startswith("[dry-run judge, not a judgement] [majority of 3 judges:")
    assert all(j["judge_calls"] >= 1 for j in row.judge_scores)
    votes = [j["score"] for j in row.judge_scores]
    expected = combine_panel(votes, row.threshold, row.direction, "majority")
    assert (row.score, row.success, row.judge_agreement) == (
        pytest.approx(expected.score),
        expected.success,
        pytest.approx(expected.agreement),
    )
