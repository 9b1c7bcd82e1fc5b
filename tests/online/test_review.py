"""Production executions in the review queue: online scores sampled, their text from n8n."""

from datetime import UTC, datetime, timedelta

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.online.review import online_review_items
from n8n_deepeval_pipeline.online.scoring import OnlineScore
from tests.n8n_api.fake_n8n import FakeN8nApi
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT
from tests.orchestration.test_online import BENCHMARK, benchmark_file, webhook_execution

DAY = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
ANSWERS = {1: "Refund issued.", 2: "I escalated it.", 3: "Refund issued!", 4: "It ships Friday."}


def online_score(number: int) -> OnlineScore:
    passed = "Refund issued" not in ANSWERS[number]
    return OnlineScore(
        workflow_hash="c" * 64, n8n_version_id=None, version_match="stored_copy",
        score_id=f"execution:{number}", kind="execution", item_key=str(number),
        execution_ids=[str(number)], started_at=DAY, scored_at=DAY, metric="no_refund",
        metric_slug="pattern_match", score=float(passed), threshold=0.5, success=passed,
        reason="matched" if passed else "no match", error_kind=None, judge=None, dry_run=False,
        tokens=0, cost_usd=None,
    )  # fmt: skip


def test_sampled_production_items_are_read_back_from_n8n(tmp_path):
    benchmark = load_benchmark(benchmark_file(tmp_path, BENCHMARK))
    scores = [online_score(n) for n in ANSWERS]
    with FakeN8nApi() as fake, N8nClient(fake.base_url, "key") as client:
        fake.executions = [
            webhook_execution(n, answer, DAY + timedelta(minutes=n))
            for n, answer in ANSWERS.items()
            if n != 4  # n8n has deleted this one since it was scored
        ]
        items = online_review_items(
            benchmark, scores, ["no_refund"], 4, client, WEBHOOK_AGENT,
            labelled={("execution:2", "no_refund")},
        )  # fmt: skip
    by_run = {item.run_id: item for item in items}
    assert set(by_run) == {"execution:1", "execution:3", "execution:4"}  # 2 is labelled
    first = by_run["execution:1"]
    assert (first.kind, first.input, first.output) == ("online", "question 1", "Refund issued.")
    (verdict,) = first.judge
    assert (verdict.metric, verdict.passed, verdict.reason) == ("no_refund", False, "no match")
    assert [metric.question for metric in first.metrics] == [None]
    gone = by_run["execution:4"]
    assert gone.output is None and "n8n holds no message and answer" in gone.output_error
    assert [item.judge[0].passed for item in items].count(True) == 1  # both verdicts sampled
