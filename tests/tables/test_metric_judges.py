"""A judge per metric and judge panels in the evaluation plan: which judge scores what,
and how a panel's votes become one score row (no workers: results are given)."""

from pathlib import Path

import pytest

from n8n_deepeval_pipeline import (
    AgentOutput,
    BenchmarkConfigError,
    DatasetRow,
    EvaluationResult,
    MetricScore,
)
from n8n_deepeval_pipeline.benchmark.config import parse_benchmark
from n8n_deepeval_pipeline.evaluation import JudgeVote
from n8n_deepeval_pipeline.judging.prices import Price, PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeConfigError, JudgeSpec
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.summary.run_summary import render_summary, summarise
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan
from n8n_deepeval_pipeline.tables.frames import from_frame, to_frame

HASH = "b" * 64
BASE = {
    "name": "demo",
    "workflow": "workflow.json",
    "dataset": {"path": "rows.csv"},
    "target": {"type": "recorded", "outputs": "outputs.jsonl"},
}
PANEL = [
    {"provider": "openai-compatible", "model": "judge-a", "baseUrl": "http://127.0.0.1:1/v1"},
    {"provider": "openai-compatible", "model": "judge-b", "baseUrl": "http://127.0.0.1:2/v1"},
    {"provider": "openai-compatible", "model": "judge-c", "baseUrl": "http://127.0.0.1:3/v1"},
]
PRICES = PriceTable(
    {
        "judge-a": Price(input=1.0, output=2.0),
        "judge-b": Price(input=10.0, output=20.0),
        "judge-c": Price(input=100.0, output=200.0),
    }
)


def benchmark(metrics, **extra):
    return parse_benchmark({**BASE, "metrics": metrics, **extra}, Path("/tmp/demo.yaml"))


def plan_for(bench, judge, prices=None):
    row = DatasetRow(
        workflow_hash=HASH, row_id="r1", position=1, raw={}, input="2+2?", expected_output="4"
    )
    runs = steps.expanded_runs([row], 1, "n")
    output = AgentOutput(workflow_hash=HASH, run_id=runs[0].run_id, actual_output="4")
    return EvaluationPlan(bench, runs, [row], [output], judge, 30, prices)


@pytest.fixture
def resource(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_KEY", "bench-secret")
    monkeypatch.setenv("METRIC_KEY", "metric-secret")
    monkeypatch.setenv("METRIC_URL", "http://127.0.0.1:9/v1")
    return JudgeResource(
        provider="openai-compatible",
        model="gpt-4o-mini",
        base_url="http://127.0.0.1:8/v1",
        api_key="default-secret",
        state_dir=str(tmp_path),
    )


def test_a_metric_judge_falls_back_field_by_field_to_the_benchmark_judge_then_the_default(
    resource,
):
    bench = benchmark(
        [
            {"metric": "bias"},  # the benchmark's judge
            {"metric": "toxicity", "model": "claude-sonnet-4-5"},  # the playbook's shorthand
            {
                "metric": "hallucination",
                "judge": {
                    "provider": "openai-compatible",
                    "baseUrlEnv": "METRIC_URL",
                    "model": "m",
                },
            },
            {
                "metric": "misuse",
                "domain": "retail",
                "judge": {"provider": "openai", "model": "gpt-4.1", "apiKeyEnv": "METRIC_KEY"},
            },
            {"metric": "exact_match"},  # no judge at all
        ],
        judge={"provider": "anthropic", "model": "claude-haiku-4-5", "apiKeyEnv": "BENCH_KEY"},
    )
    plan = plan_for(bench, resource.spec_for)
    judges = {label: specs[0] for label, specs in plan.judges_of.items()}
    assert judges["bias"].label == "anthropic:claude-haiku-4-5"
    assert judges["toxicity"].label == "anthropic:claude-sonnet-4-5"
    assert judges["toxicity"].api_key.get_secret_value() == "bench-secret"
    assert judges["bias"].base_url is None  # not the default's: another provider
    # another provider than the benchmark's: nothing of its judge, the default's settings
    hallucination = judges["hallucination"]
    assert (hallucination.label, hallucination.base_url) == (
        "openai-compatible:m",
        "http://127.0.0.1:9/v1",
    )
    assert hallucination.api_key.get_secret_value() == "default-secret"
    assert judges["misuse"].label == "openai:gpt-4.1"
    assert judges["misuse"].api_key.get_secret_value() == "metric-secret"
    assert plan.judge.label == "anthropic:claude-haiku-4-5"
    tasks = {task.metric_label: task for task in plan.tasks}
    assert {label: task.judge.label for label, task in tasks.items()} == {
        label: spec.label for label, spec in judges.items()
    }
    assert all(not task.panel for task in plan.tasks)
    # the judge options stay out of the config the worker builds the metric from
    assert not {"judge", "model", "judges", "panel"} & set(tasks["misuse"].config)
    # each judge's own limits, breaker and cache identity
    assert len({spec.identity for spec in plan.judges}) == len(plan.judges) == 4


def test_a_panel_is_one_task_with_every_judge_and_a_timeout_per_judge():
    bench = benchmark([{"metric": "correctness", "judges": PANEL, "timeoutS": 20}])
    plan = plan_for(bench, JudgeSpec())
    (task,) = plan.tasks
    assert [judge.label for judge in task.panel] == [
        "openai-compatible:judge-a",
        "openai-compatible:judge-b",
        "openai-compatible:judge-c",
    ]
    assert task.timeout_s == 60
    alone = task.model_copy(update={"panel": task.panel[:1]})
    assert alone.fingerprint() != task.fingerprint()  # a resumed run never mixes panels


def votes(*scores, error_at=None):
    result = []
    for index, score in enumerate(scores):
        judge = f"openai-compatible:judge-{'abc'[index]}"
        if index == error_at:
            result.append(
                JudgeVote(
                    judge=judge, error="HTTP 500 (after 6 attempt(s))", error_kind="judge_error"
                )
            )
        else:
            result.append(
                JudgeVote(
                    judge=judge,
                    score=score,
                    reason=f"{score * 5:.0f}/5",
                    judge_calls=1,
                    prompt_tokens=1000,
                    completion_tokens=500,
                )
            )
    return result


@pytest.mark.parametrize(
    ("rule", "score", "success", "agreement"),
    [
        # judges say 1.0, 0.4, 0.4 against threshold 0.5: two of three fail
        ("majority", 0.4, False, 2 / 3),  # the majority's verdict and the mean of its scores
        ("mean", 0.6, True, 1 / 3),  # the mean passes, but only judge a agrees with it
    ],
)
def test_a_panel_row_combines_the_votes(rule, score, success, agreement):
    bench = benchmark([{"metric": "correctness", "judges": PANEL, "panel": rule}])
    plan = plan_for(bench, JudgeSpec(), PRICES)
    result = EvaluationResult.of_panel(0, votes(1.0, 0.4, 0.4))
    row = plan.row_for(result)
    assert (row.score, row.success) == (pytest.approx(score), success)
    assert (row.panel, row.judge_agreement) == (rule, pytest.approx(agreement))
    assert (
        row.judge
        == "openai-compatible:judge-a, openai-compatible:judge-b, openai-compatible:judge-c"
    )
    assert [(j["judge"], j["score"], j["success"]) for j in row.judge_scores] == [
        ("openai-compatible:judge-a", 1.0, True),
        ("openai-compatible:judge-b", 0.4, False),
        ("openai-compatible:judge-c", 0.4, False),
    ]
    # cost per judge, each at its own model's price: 1000 in + 500 out tokens each
    assert [j["cost_usd"] for j in row.judge_scores] == pytest.approx([0.002, 0.02, 0.2])
    assert row.cost_usd == pytest.approx(0.222)
    assert (row.judge_calls, row.tokens) == (3, 4500)
    assert row.reason.startswith(f"[{rule} of 3 judges: ")
    assert "openai-compatible:judge-a 1.000 pass: 5/5" in row.reason


def test_a_judge_that_fails_leaves_the_panel_to_the_others_and_is_recorded():
    bench = benchmark([{"metric": "correctness", "judges": PANEL}])
    plan = plan_for(bench, JudgeSpec(), PRICES)
    # judge b errs; a (1.0) and c (0.8) answer and agree
    row = plan.row_for(EvaluationResult.of_panel(0, votes(1.0, None, 0.8, error_at=1)))
    assert (row.score, row.success, row.error_kind) == (pytest.approx(0.9), True, None)
    assert row.judge_agreement == 1.0  # over the judges that answered
    failed = row.judge_scores[1]
    assert (failed["score"], failed["success"], failed["error_kind"]) == (None, None, "judge_error")
    assert "openai-compatible:judge-b no score (judge_error)" in row.reason
    assert row.reason.startswith("[majority of 3 judges: 2 of 2 agree]")
    assert row.cost_usd == pytest.approx(0.202)  # the failed judge cost nothing


def test_a_panel_without_its_quorum_is_an_unjudged_error_row():
    bench = benchmark([{"metric": "correctness", "judges": PANEL}])
    plan = plan_for(bench, JudgeSpec())
    panel_votes = votes(1.0, None, error_at=1)
    panel_votes.append(panel_votes[1].model_copy(update={"judge": "openai-compatible:judge-c"}))
    result = EvaluationResult.of_panel(0, panel_votes)
    assert result.error_kind == "judge_error"
    assert result.error.startswith("1 of 3 judges answered, a panel needs 2.")
    row = plan.row_for(result)
    assert (row.score, row.success, row.judge_agreement) == (None, False, None)
    assert row.error_kind == "judge_error" and row.panel == "majority"
    assert len(row.judge_scores) == 3


def test_runs_without_output_get_panel_rows_without_votes():
    bench = benchmark([{"metric": "correctness", "judges": PANEL, "panel": "mean"}])
    row = DatasetRow(workflow_hash=HASH, row_id="r1", position=1, raw={})
    runs = steps.expanded_runs([row], 1, "n")
    plan = EvaluationPlan(bench, runs, [row], [], JudgeSpec(), 30)
    (missing,) = plan.rows_without_output()
    assert (missing.error_kind, missing.panel, missing.judge_scores) == (
        "target_error",
        "mean",
        None,
    )


def test_a_judge_that_cannot_be_built_names_the_metric(resource):
    bench = benchmark(
        [{"metric": "bias", "judge": {"provider": "openai-compatible", "baseUrlEnv": "UNSET_X"}}]
    )
    with pytest.raises(JudgeConfigError, match=r"metric 'bias': .*UNSET_X, which is not set"):
        plan_for(bench, resource.spec_for)


def test_a_panel_naming_one_judge_twice_is_refused():
    bench = benchmark([{"metric": "bias", "judges": [PANEL[0], PANEL[1], PANEL[0]]}])
    with pytest.raises(JudgeConfigError, match="openai-compatible:judge-a more than once"):
        plan_for(bench, JudgeSpec())


@pytest.mark.parametrize(
    ("metric", "problem"),
    [
        (
            {"metric": "bias", "judge": {"model": "x"}, "judges": [{"model": "a"}, {"model": "b"}]},
            "give one of 'judge', 'model' or 'judges', not judge and judges",
        ),
        ({"metric": "bias", "panel": "mean"}, "list the judges in 'judges'"),
        ({"metric": "bias", "judges": [{"model": "a"}]}, "at least 2 items"),
        ({"metric": "exact_match", "model": "gpt-4o"}, "(Exact Match) calls no judge"),
        (
            {"metric": "bias", "judges": [{"model": "a"}, {"model": "b"}], "panel": "vote"},
            "Input should be 'majority' or 'mean'",
        ),
    ],
)
def test_judge_options_are_checked_when_the_file_is_read(metric, problem):
    with pytest.raises(BenchmarkConfigError) as caught:
        benchmark([metric])
    assert problem in " ".join(caught.value.problems)


def test_the_summary_shows_agreement_per_metric_and_what_each_judge_cost():
    bench = benchmark(
        [
            {"metric": "correctness", "label": "panel", "judges": PANEL},
            {"metric": "correctness", "label": "single", "judge": PANEL[0]},
        ]
    )
    plan = plan_for(bench, JudgeSpec(), PRICES)
    panel_task, single_task = plan.tasks
    rows = [
        plan.row_for(EvaluationResult.of_panel(panel_task.task_id, votes(1.0, 0.4, 0.4))),
        plan.row_for(
            EvaluationResult(
                task_id=single_task.task_id,
                score=0.8,
                judge_calls=1,
                prompt_tokens=1000,
                completion_tokens=500,
            )
        ),
    ]
    summary = summarise("demo", HASH, rows, [], [], ["panel", "single"])
    by_metric = {metric.metric: metric for metric in summary.metrics}
    assert (by_metric["panel"].panel, by_metric["panel"].agreement) == (
        "majority",
        pytest.approx(2 / 3),
    )
    assert (by_metric["single"].panel, by_metric["single"].agreement) == (None, None)
    usage = {u.judge: (u.scores, u.judge_calls, u.cost_usd) for u in summary.judges}
    assert usage == {
        "openai-compatible:judge-a": (2, 2, pytest.approx(0.004)),  # the panel's and its own
        "openai-compatible:judge-b": (1, 1, pytest.approx(0.02)),
        "openai-compatible:judge-c": (1, 1, pytest.approx(0.2)),
    }
    text = render_summary(summary)
    assert "judges 3 (each below)" in text
    header = next(line for line in text.splitlines() if line.startswith("metric"))
    assert "agree" in header
    panel_line = next(line for line in text.splitlines() if line.startswith("panel "))
    assert "0.667" in panel_line and "(panel: majority)" in panel_line
    assert "openai-compatible:judge-c  scores 1 · calls 1 (+0 cached) · tokens 1500" in text


def test_score_tables_stored_before_panels_read_with_empty_panel_columns():
    bench = benchmark([{"metric": "correctness"}])
    plan = plan_for(bench, JudgeSpec())
    row = plan.row_for(EvaluationResult(task_id=0, score=1.0))
    old = to_frame(MetricScore, [row]).drop(columns=["panel", "judge_agreement", "judge_scores"])
    (read,) = from_frame(MetricScore, old)
    assert (read.panel, read.judge_agreement, read.judge_scores) == (None, None, None)
    assert read.score == 1.0
