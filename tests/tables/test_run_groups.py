"""Consistency over any evalContext field and labels from any item path; aggregate subsets;
the seed's column names in the Data Table sink."""

import json
from statistics import stdev

import pytest

from n8n_deepeval_pipeline import (
    AgentOutput,
    Benchmark,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
)
from n8n_deepeval_pipeline.n8n_api.client import DataTable
from n8n_deepeval_pipeline.n8n_api.data_table_sink import AGGREGATE_KEYS, write_rows
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.run_groups import ConsistencyFieldError
from n8n_deepeval_pipeline.tables.run_items import run_item
from tests.tables.factories import metric_score

HASH = "b" * 64


def benchmark(**sections) -> Benchmark:
    document = {
        "name": "groups",
        "workflow": "workflow.json",
        "dataset": {"path": "rows.jsonl"},
        "target": {"type": "recorded", "outputs": "outputs.jsonl"},
        "metrics": [{"metric": "exact_match", "label": "a"}, {"metric": "bias", "label": "b"}],
        **sections,
    }
    return Benchmark.model_validate(document)


def dataset_row(row_id: str, **raw) -> DatasetRow:
    return DatasetRow(workflow_hash=HASH, row_id=row_id, position=1, raw={"id": row_id, **raw})


def run(row_id: str, index: int, run_name: str = "nightly") -> ExpandedRun:
    case = f"{HASH}:{row_id}"
    return ExpandedRun(
        workflow_hash=HASH,
        run_id=f"{case}:{index}",
        case_id=case,
        run_index=index,
        row_id=row_id,
        run_name=run_name,
    )


def score(run_: ExpandedRun, metric: str, value: float | None, success: bool) -> MetricScore:
    return metric_score(run_.run_id, metric, value, success, latency_s=0.0)


def output(run_: ExpandedRun, text: str | None, **fields) -> AgentOutput:
    return AgentOutput(workflow_hash=HASH, run_id=run_.run_id, actual_output=text, **fields)


# Two rows × two runs; metric "a" only (aggregate.metrics: [a]).
RUNS = [run("r1", 0), run("r1", 1), run("r2", 0), run("r2", 1)]
A_SCORES = [1.0, 0.0, 0.5, 0.0]
SCORES = [score(r, "a", v, v >= 0.5) for r, v in zip(RUNS, A_SCORES, strict=True)] + [
    score(r, "b", 1.0, True) for r in RUNS
]
ROWS = [dataset_row("r1", meta={"kind": "billing"}), dataset_row("r2", meta={"kind": "orders"})]
ANSWERS = [
    {"result": {"category": "refund"}},
    {"result": {"category": "refund"}},
    {"result": {"category": "refund"}},
    {"result": {"category": "exchange"}},
]
OUTPUTS = [output(r, json.dumps(a)) for r, a in zip(RUNS, ANSWERS, strict=True)]


def consistency(bench: Benchmark, outputs=OUTPUTS, runs=RUNS, rows=ROWS):
    aggregates = steps.run_aggregates(bench, runs, SCORES)
    stats = steps.consistency_stats(bench, runs, aggregates, SCORES, outputs, rows)
    return {row.case_id: row for row in stats}


def test_aggregate_counts_only_the_named_metrics_or_all_connected():
    subset = steps.run_aggregates(benchmark(aggregate={"metrics": ["a"]}), RUNS, SCORES)
    assert [(a.overall_score, a.overall_success, a.metrics_counted) for a in subset] == [
        (1.0, True, 1),
        (0.0, False, 1),
        (0.5, True, 1),
        (0.0, False, 1),
    ]
    assert {m["metric"] for a in subset for m in a.metrics} == {"a"}
    every = steps.run_aggregates(benchmark(aggregate={"metrics": "allConnected"}), RUNS, SCORES)
    # a, b both count: means of (1, 1), (0, 1), (0.5, 1), (0, 1); allPass fails with a failing
    assert [(a.overall_score, a.overall_success, a.metrics_counted) for a in every] == [
        (1.0, True, 2),
        (0.5, False, 2),
        (0.75, True, 2),
        (0.5, False, 2),
    ]
    majority = benchmark(aggregate={"metrics": "allConnected", "passRule": "anyPass"})
    assert [a.overall_success for a in steps.run_aggregates(majority, RUNS, SCORES)] == [True] * 4


def test_groups_by_run_index_computed_by_hand():
    by_index = consistency(
        benchmark(aggregate={"metrics": ["a"]}, consistency={"groupByField": "runIndex"})
    )
    assert set(by_index) == {"0", "1"}
    first, second = by_index["0"], by_index["1"]
    # runIndex 0: r1:0 (1.0, pass) and r2:0 (0.5, pass)
    assert (first.n_runs, first.mean_score, first.pass_rate) == (2, 0.75, 1.0)
    assert first.variance == pytest.approx(0.0625)  # population variance of (1.0, 0.5)
    assert first.std == pytest.approx(0.25)
    assert first.cv == pytest.approx(stdev([1.0, 0.5]) / 0.75)
    assert first.pass_at_k == {1: 1.0, 2: 1.0}
    # overall consistency (cv basis) = 1 − mean per-metric cv: a's cv as above, b's is 0
    assert first.overall_consistency == pytest.approx(1 - (stdev([1.0, 0.5]) / 0.75 + 0) / 2)
    # runIndex 1: r1:1 and r2:1 both 0.0, failing
    assert (second.n_runs, second.mean_score, second.cv, second.pass_rate) == (2, 0.0, 0.0, 0.0)
    assert second.pass_at_k == {1: 0.0, 2: 0.0}


def test_groups_by_run_name_and_workflow_hash_hold_every_run():
    for field, key in (("runName", "nightly"), ("workflowHash", HASH), ("isEvalRun", "true")):
        (stats,) = consistency(
            benchmark(aggregate={"metrics": ["a"]}, consistency={"groupByField": field})
        ).values()
        assert (stats.case_id, stats.n_runs) == (key, 4)
        assert stats.mean_score == pytest.approx(sum(A_SCORES) / 4)
        assert stats.pass_rate == 0.5


def test_case_and_row_grouping_are_unchanged():
    by_case = consistency(benchmark(aggregate={"metrics": ["a"]}))
    assert set(by_case) == {f"{HASH}:r1", f"{HASH}:r2"}
    assert by_case[f"{HASH}:r1"].mean_score == 0.5
    by_row = consistency(
        benchmark(aggregate={"metrics": ["a"]}, consistency={"groupByField": "rowId"})
    )
    assert set(by_row) == {"r1", "r2"}
    assert by_row["r2"].mean_score == 0.25


def test_grouping_by_a_field_a_run_lacks_names_the_field_and_the_run():
    bench = benchmark()
    missing = bench.model_copy(
        update={
            "consistency": bench.consistency.model_copy(update={"group_by_field": "sourceTableId"})
        }
    )
    with pytest.raises(ConsistencyFieldError) as caught:
        consistency(missing)
    assert str(caught.value) == (
        "consistency.groupByField 'sourceTableId': evalContext.sourceTableId is not set on run "
        f"{HASH}:r1:0"
    )
    table = benchmark(
        dataset={"dataTable": "support_cases"}, consistency={"groupByField": "sourceTableId"}
    )
    assert set(consistency(table)) == {"support_cases"}


def test_label_field_reads_a_nested_path_of_the_answer():
    bench = benchmark(
        consistency={"labelField": "result.category", "consistencyBasis": "agreement"}
    )
    stats = consistency(bench)
    one, two = stats[f"{HASH}:r1"], stats[f"{HASH}:r2"]
    assert (one.label_distribution, one.label_agreement, one.overall_consistency) == (
        {"refund": 2},
        1.0,
        1.0,
    )
    assert (two.label_distribution, two.label_agreement, two.majority_label) == (
        {"refund": 1, "exchange": 1},
        0.5,
        "refund",
    )
    assert two.label_entropy == pytest.approx(1.0)
    assert two.overall_consistency == 0.5


@pytest.mark.parametrize(
    ("label_field", "r1_labels"),
    [
        ("row.meta.kind", {"billing": 2}),
        ('row["meta"]["kind"]', {"billing": 2}),
        ("evalContext.runIndex", {"0": 1, "1": 1}),
        ("success", {"true": 1, "false": 1}),
        ("metrics[0].metric", {"a": 2}),
        ("output.result.category", {"refund": 2}),  # the output's JSON text, walked
        ("output", {'{"result": {"category": "refund"}}': 2}),
    ],
)
def test_label_field_is_any_path_into_the_runs_item(label_field, r1_labels):
    bench = benchmark(aggregate={"metrics": ["a"]}, consistency={"labelField": label_field})
    assert consistency(bench)[f"{HASH}:r1"].label_distribution == r1_labels


def test_recorded_label_and_row_column_labels_keep_their_meaning():
    outputs = [o.model_copy(update={"label": "answered"}) for o in OUTPUTS]
    outputs[1] = outputs[1].model_copy(update={"label": None})
    rows = [r.model_copy(update={"label": "mapped"}) for r in ROWS]
    stats = consistency(benchmark(consistency={"labelField": "label"}), outputs, RUNS, rows)
    assert stats[f"{HASH}:r1"].label_distribution == {"answered": 1, "mapped": 1}


def test_runs_without_the_label_have_none_and_a_label_basis_without_any_is_an_error():
    partly = [
        o if i else o.model_copy(update={"actual_output": "plain text"})
        for i, o in enumerate(OUTPUTS)
    ]
    bench = benchmark(consistency={"labelField": "result.category", "consistencyBasis": "entropy"})
    assert consistency(bench, partly)[f"{HASH}:r1"].label_distribution == {"refund": 1}
    typo = benchmark(consistency={"labelField": "result.categry", "consistencyBasis": "entropy"})
    with pytest.raises(ConsistencyFieldError) as caught:
        consistency(typo)
    assert "consistency.labelField 'result.categry' found no label in any run" in str(caught.value)
    # the cv basis only reports labels when there are some
    quiet = benchmark(consistency={"labelField": "result.categry"})
    assert all(s.label_distribution is None for s in consistency(quiet).values())
    # runs that all failed to answer are not a label error
    failed = [o.model_copy(update={"actual_output": None, "error": "500"}) for o in OUTPUTS]
    assert all(s.overall_consistency is None for s in consistency(typo, failed).values())


def test_the_run_item_layers_row_answer_mapped_fields_and_eval_context():
    row = DatasetRow(
        workflow_hash=HASH,
        row_id="r1",
        position=1,
        input="Where is A1?",
        expected_output="shipped",
        raw={"id": "r1", "question": "Where is A1?", "output": "a column", "expected_output": "x"},
    )
    answer = output(RUNS[0], '{"result": {"answer": "shipped"}, "input": "shadowed"}', label="ok")
    item = run_item(RUNS[0], row, answer, source_table_id="cases")
    assert item["question"] == "Where is A1?" and item["expected_output"] == "x"
    assert item["result"] == {"answer": "shipped"}
    assert (item["input"], item["expectedOutput"], item["label"]) == (
        "Where is A1?",
        "shipped",
        "ok",
    )
    assert item["output"] == item["actualOutput"] == answer.actual_output
    assert item["row"] is row.raw
    assert item["evalContext"] == {
        "workflowHash": HASH,
        "caseId": f"{HASH}:r1",
        "runIndex": 0,
        "runId": f"{HASH}:r1:0",
        "runName": "nightly",
        "isEvalRun": True,
        "rowId": "r1",
        "sourceTableId": "cases",
    }
    assert "score" not in item


class RecordingClient:
    """The few Data Table calls the sink makes, kept in memory."""

    def __init__(self):
        self.created, self.upserts = [], []

    def find_data_table(self, name):
        return None

    def rows(self, table_id, filter_=None):
        return []

    def create_data_table(self, name, columns):
        self.created.append((name, [column.name for column in columns]))
        return DataTable(id="t1", name=name)

    def upsert_row(self, table_id, keys, row):
        self.upserts.append((keys, row))


def test_the_seed_column_names_reach_the_data_table():
    bench = benchmark(
        sink={"runAggregates": {"dataTable": "runs"}},
        aggregate={"scoreColumn": "score", "runIdColumn": "run", "metrics": ["a"]},
    )
    (aggregate,) = steps.run_aggregates(bench, RUNS[:1], SCORES)
    client = RecordingClient()
    write_rows(client, bench.sink.run_aggregates, [aggregate], AGGREGATE_KEYS, RunAggregate)
    ((name, columns),) = client.created
    assert name == "runs" and {"run", "score", "overallSuccess", "metrics"} <= set(columns)
    assert not {"runId", "overallScore"} & set(columns)
    ((keys, record),) = client.upserts
    assert keys == {"run": RUNS[0].run_id, "workflowHash": HASH}
    assert record["score"] == 1.0


def test_a_run_aggregate_row_is_what_consistency_reads():
    (aggregate,) = steps.run_aggregates(benchmark(aggregate={"metrics": ["a"]}), RUNS[:1], SCORES)
    assert isinstance(aggregate, RunAggregate)
    item = run_item(RUNS[0], ROWS[0], OUTPUTS[0], aggregate)
    assert (item["runId"], item["score"], item["success"], item["overallScore"]) == (
        RUNS[0].run_id,
        1.0,
        True,
        1.0,
    )
    assert item["metrics"][0]["metric"] == "a"
