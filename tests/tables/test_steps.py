"""The pure table steps: rows in, rows out, with the values the stored tables hold."""

import json

import pytest

from n8n_deepeval_pipeline import (
    AgentOutput,
    DatasetRow,
    EvaluationResult,
    JudgeSpec,
    load_benchmark,
    workflow_hash,
)
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan, conversation
from n8n_deepeval_pipeline.workflow.variants import family
from tests.conftest import EXAMPLE
from tests.tables.factories import metric_score as score

HASH = "a" * 64


def row(row_id: str, **fields) -> DatasetRow:
    return DatasetRow(workflow_hash=HASH, row_id=row_id, position=1, raw={}, **fields)


def test_ids_are_the_seeds_and_runs_are_row_major():
    runs = steps.expanded_runs([row("r1"), row("42")], 3, "nightly")
    assert [run.run_id for run in runs] == [
        f"{HASH}:r1:0",
        f"{HASH}:r1:1",
        f"{HASH}:r1:2",
        f"{HASH}:42:0",
        f"{HASH}:42:1",
        f"{HASH}:42:2",
    ]
    assert {run.case_id for run in runs} == {f"{HASH}:r1", f"{HASH}:42"}
    assert [run.run_index for run in runs[:3]] == [0, 1, 2]
    assert {(run.workflow_hash, run.run_name, run.data_table_id) for run in runs} == {
        (HASH, "nightly", None)
    }


def test_the_snapshot_refuses_a_workflow_that_hashes_to_another_partition(tmp_path):
    workflow = json.loads((EXAMPLE / "workflow.json").read_text())
    digest = workflow_hash(workflow)
    (snapshot,) = steps.workflow_snapshot(workflow, "workflow.json", digest[:12])
    assert (snapshot.workflow_hash, snapshot.node_count) == (digest, len(workflow["nodes"]))
    assert json.loads(snapshot.canonical_json)["nodes"][0]["name"] == min(
        node["name"] for node in workflow["nodes"]
    )
    webhook = next(node for node in workflow["nodes"] if "webhookId" in node)
    assert webhook["parameters"]["path"] not in snapshot.canonical_json  # may be a secret
    assert "<webhook path hidden>" in snapshot.canonical_json
    with pytest.raises(steps.PartitionMismatchError, match=f"now hashes to {digest[:12]}, not"):
        steps.workflow_snapshot(workflow, "workflow.json", HASH[:12])


def test_a_variants_snapshot_is_its_own_graph_named_after_it_with_the_workflows_hash():
    workflow = json.loads((EXAMPLE / "workflow.json").read_text())
    variants = {"nano": {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}}}
    base, nano = family(workflow, variants)
    (snapshot,) = steps.workflow_snapshot(workflow, "workflow.json", nano.key, variants)
    assert (snapshot.workflow_hash, snapshot.variant) == (nano.workflow_hash, "nano")
    assert snapshot.base_hash == base.workflow_hash
    assert '"value":"gpt-4.1-nano"' in snapshot.canonical_json
    (own,) = steps.workflow_snapshot(workflow, "workflow.json", base.key, variants)
    assert (own.variant, own.base_hash) == (None, None)
    with pytest.raises(
        steps.PartitionMismatchError, match=f"base {base.key}, nano {nano.key}, not to"
    ):
        steps.workflow_snapshot(workflow, "workflow.json", HASH[:12], variants)


def example_benchmark(**aggregate):
    benchmark = load_benchmark(EXAMPLE / "benchmark.yaml")
    update = benchmark.aggregate.model_copy(update=aggregate)
    return benchmark.model_copy(update={"aggregate": update})


def test_run_aggregates_normalise_lower_is_better_and_count_errors_as_failures():
    runs = steps.expanded_runs([row("r1")], 2, "n")
    first, second = (run.run_id for run in runs)
    scores = [
        score(first, "helpfulness", 0.8, True, tokens=10, cost_usd=0.01, judge_calls=2),
        score(first, "bias", 0.2, True, direction="lower_is_better", cost_usd=0.02),
        score(first, "exact_answer", 0.0, False),  # not counted by the example's aggregate
        score(second, "helpfulness", 0.9, True),
        score(second, "bias", None, False, error="judge down", error_kind="judge_error"),
    ]
    benchmark = example_benchmark(metrics=["helpfulness", "bias"])
    one, two = steps.run_aggregates(benchmark, runs, scores)
    assert (one.overall_score, one.raw_mean_score, one.overall_success) == pytest.approx(
        (0.8, 0.5, True)
    )
    assert (one.metrics_passed, one.metrics_counted, one.metric_errors) == (2, 2, 0)
    assert (one.judge_calls, one.tokens, one.cost_usd) == (2, 10, pytest.approx(0.03))
    assert [m["metric"] for m in one.metrics] == ["helpfulness", "bias"]
    assert (two.overall_score, two.overall_success, two.metric_errors) == (0.9, False, 1)
    any_pass = steps.run_aggregates(example_benchmark(pass_rule="anyPass"), runs[1:], scores)
    assert any_pass[0].overall_success is True


def test_dry_run_placeholders_decide_no_run_that_a_real_score_can_decide():
    """A fresh benchmark on the dry-run judge: a placeholder 0.0 must not fail every case."""
    runs = steps.expanded_runs([row("r1")], 2, "n")
    first, second = (run.run_id for run in runs)
    scores = [
        score(first, "knowledge_retention", 0.0, False, dry_run=True, judge="dry-run"),
        score(first, "answered", 1.0, True),
        score(second, "knowledge_retention", 0.0, False, dry_run=True, judge="dry-run"),
        score(second, "answered", 0.0, False),
    ]
    benchmark = example_benchmark(metrics=["knowledge_retention", "answered"])
    one, two = steps.run_aggregates(benchmark, runs, scores)
    assert (one.overall_success, two.overall_success) == (True, False)  # the real score's word
    assert [m["metric"] for m in one.metrics] == ["answered"]
    assert one.overall_score == 1.0
    # with no real score among those that decide, the placeholders still do (and say so)
    alone = [s for s in scores if s.metric == "knowledge_retention"]
    only = steps.run_aggregates(example_benchmark(metrics=["knowledge_retention"]), runs, alone)
    assert [m["metric"] for m in only[0].metrics] == ["knowledge_retention"]
    # a real judge's scores decide as they always did
    judged = [s.model_copy(update={"dry_run": False}) for s in scores]
    assert steps.run_aggregates(benchmark, runs, judged)[0].overall_success is False


def test_consistency_groups_runs_of_a_case_with_pass_at_k():
    runs = steps.expanded_runs([row("r1", label="refund")], 3, "n")
    scores = [
        score(run.run_id, "helpfulness", value, value >= 0.5)
        for run, value in zip(runs, [1.0, 0.0, 1.0], strict=True)
    ]
    benchmark = example_benchmark(metrics=["helpfulness"])
    aggregates = steps.run_aggregates(benchmark, runs, scores)
    outputs = [AgentOutput(workflow_hash=HASH, run_id=run.run_id, label="x") for run in runs]
    (stats,) = steps.consistency_stats(
        benchmark, runs, aggregates, scores, outputs, [row("r1", label="refund")]
    )
    assert (stats.case_id, stats.n_runs, stats.pass_rate) == (f"{HASH}:r1", 3, pytest.approx(2 / 3))
    assert stats.pass_at_k == pytest.approx({1: 2 / 3, 2: 1.0, 3: 1.0})
    assert stats.pass_hat_k == pytest.approx({1: 2 / 3, 2: 1 / 3, 3: 0.0})
    assert (stats.label_distribution, stats.label_agreement) == ({"x": 3}, 1.0)


def test_the_plan_sends_runs_with_output_and_rows_the_rest_as_target_errors():
    benchmark = load_benchmark(EXAMPLE / "benchmark.yaml")
    runs = steps.expanded_runs([row("r1", input="hi")], 2, "n")
    outputs = [
        AgentOutput(workflow_hash=HASH, run_id=runs[0].run_id, actual_output="hello"),
        AgentOutput(workflow_hash=HASH, run_id=runs[1].run_id, error="target_error: 500"),
    ]
    plan = EvaluationPlan(benchmark, runs, [row("r1", input="hi")], outputs, JudgeSpec(), 30)
    metrics = len(benchmark.metrics)
    assert (len(plan.tasks), plan.total) == (metrics, 2 * metrics)
    assert {task.item.actual_output for task in plan.tasks} == {"hello"}
    missing = plan.rows_without_output()
    assert {(r.run_id, r.error_kind, r.error, r.success) for r in missing} == {
        (runs[1].run_id, "target_error", "target_error: 500", False)
    }
    finished = {plan.tasks[0].fingerprint(): EvaluationResult(task_id=99, score=1.0)}
    kept, to_run = plan.resume(finished)
    assert [(r.metric, r.score) for r in kept] == [(plan.tasks[0].metric_label, 1.0)]
    assert [task.task_id for task in to_run] == [task.task_id for task in plan.tasks[1:]]


def test_a_conversation_is_the_recorded_memory_or_the_history_plus_this_run():
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    dataset_row = row("r1", input="and now?", turns=history)
    output = AgentOutput(workflow_hash=HASH, run_id="x:0", actual_output="done")
    assert conversation(dataset_row, output) == [
        *history,
        {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "done"},
    ]
    memory = [{"human": "a", "ai": "b"}]
    assert conversation(dataset_row, output.model_copy(update={"turns": memory})) == memory
    assert conversation(row("r2"), output) is None
    # history kept as JSON text or as a memory's {messages: [...]} is history too
    exchange = [{"role": "user", "content": "and now?"}, {"role": "assistant", "content": "done"}]
    as_text = row("r3", input="and now?", turns=json.dumps(history))
    assert conversation(as_text, output) == [*history, *exchange]
    wrapped = row("r4", input="and now?", turns={"messages": history})
    assert conversation(wrapped, output) == [*history, *exchange]
