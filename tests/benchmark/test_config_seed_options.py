"""The seed's Aggregate, Consistency and preset options, as a benchmark file spells them."""

import pytest

from n8n_deepeval_pipeline import load_benchmark
from tests.benchmark.test_config import VALID, problems, with_changes, write

SINK = {
    "runAggregates": {"dataTable": "runs"},
    "consistencyStats": {"dataTable": "cases", "columns": {"passRate": "pass_rate"}},
}


@pytest.mark.parametrize(
    "field",
    [
        "caseId",
        "rowId",
        "runId",
        "runIndex",
        "runName",
        "workflowHash",
        "isEvalRun",
        "evalContext.runName",
    ],
)
def test_group_by_field_takes_any_eval_context_field(tmp_path, field):
    benchmark = load_benchmark(write(tmp_path, with_changes(consistency={"groupByField": field})))
    assert benchmark.consistency.group_by_field == field.removeprefix("evalContext.")


def test_group_by_source_table_needs_a_data_table_dataset(tmp_path):
    (problem,) = problems(tmp_path, with_changes(consistency={"groupByField": "sourceTableId"}))
    assert "consistency.groupByField 'sourceTableId'" in problem
    assert "no evalContext.sourceTableId" in problem
    table = with_changes(
        dataset={"dataTable": "cases"}, consistency={"groupByField": "sourceTableId"}
    )
    assert load_benchmark(write(tmp_path, table)).consistency.group_by_field == "sourceTableId"
    (problem,) = problems(tmp_path, with_changes(consistency={"groupByField": "caseID"}))
    assert problem.startswith("consistency.groupByField: Input should be 'caseId', 'rowId'")


def test_label_field_is_any_item_path_and_a_malformed_one_is_named(tmp_path):
    nested = with_changes(
        consistency={"labelField": "result.category", "consistencyBasis": "entropy"}
    )
    consistency = load_benchmark(write(tmp_path, nested)).consistency
    assert consistency.label_path == ("result", "category")
    bracket = with_changes(consistency={"labelField": 'row["my column"]'})
    assert load_benchmark(write(tmp_path, bracket)).consistency.label_path == ("row", "my column")
    (problem,) = problems(tmp_path, with_changes(consistency={"labelField": "result..category"}))
    assert problem.startswith("consistency.labelField: Value error, an empty segment")


def test_aggregate_metrics_take_all_connected_or_a_non_empty_list(tmp_path):
    metrics = [{"metric": "exact_match"}, {"metric": "bias"}]
    every = with_changes(metrics=metrics, aggregate={"metrics": "allConnected"})
    assert load_benchmark(write(tmp_path, every)).aggregate.metrics is None
    some = with_changes(metrics=metrics, aggregate={"metrics": ["bias"]})
    assert load_benchmark(write(tmp_path, some)).aggregate.metrics == ["bias"]
    found = problems(tmp_path, with_changes(metrics=metrics, aggregate={"metrics": []}))
    assert any("name at least one metric label, or allConnected" in p for p in found)


def test_seed_column_names_rename_the_data_table_sink_columns(tmp_path):
    document = with_changes(
        sink=SINK,
        aggregate={
            "runIdColumn": "run",
            "scoreColumn": "score",
            "successColumn": "passed",
            "metricsColumn": "metricsJson",
        },
        consistency={
            "caseIdColumn": "case",
            "statsColumn": "stats",
            "meanScoreColumn": "meanScore",
        },
    )
    benchmark = load_benchmark(write(tmp_path, document))
    assert benchmark.aggregate.score_column == "score"
    assert benchmark.sink.run_aggregates.columns == {
        "runId": "run",
        "overallScore": "score",
        "overallSuccess": "passed",
        "metrics": "metricsJson",
    }
    # the seed's default names rename nothing; sink columns stay
    assert benchmark.sink.consistency_stats.columns == {
        "passRate": "pass_rate",
        "caseId": "case",
        "metricStats": "stats",
    }


def test_column_names_need_the_sink_table_and_agree_with_its_columns(tmp_path):
    (problem,) = problems(tmp_path, with_changes(aggregate={"scoreColumn": "score"}))
    assert (
        "aggregate.scoreColumn name columns of the n8n Data Table in sink.runAggregates" in problem
    )
    clash = with_changes(
        sink={"runAggregates": {"dataTable": "runs", "columns": {"overallScore": "total"}}},
        aggregate={"scoreColumn": "score"},
    )
    (problem,) = problems(tmp_path, clash)
    assert "aggregate.scoreColumn ('score') and sink.runAggregates.columns.overallScore" in problem
    same = with_changes(
        sink={"runAggregates": {"dataTable": "runs", "columns": {"overallScore": "score"}}},
        aggregate={"scoreColumn": "score"},
    )
    assert load_benchmark(write(tmp_path, same)).sink.run_aggregates.columns == {
        "overallScore": "score"
    }
    duplicate = with_changes(
        sink={"runAggregates": {"dataTable": "runs", "columns": {"runId": "id"}}},
        aggregate={"scoreColumn": "id"},
    )
    assert any(
        "two columns cannot share the name(s) ['id']" in p for p in problems(tmp_path, duplicate)
    )


def test_preset_answers_are_expressions_and_unsupported_ones_are_named(tmp_path):
    presets = [
        {
            "metric": "correctness",
            "actualAnswer": "={{ $json.result.answer }}",
            "expectedAnswer": "={{ $json.expected_output }}",
        },
        {"metric": "helpfulness", "userQuery": "={{ $json.input }}", "actualAnswer": "Paris"},
    ]
    benchmark = load_benchmark(write(tmp_path, with_changes(metrics=presets)))
    correctness, helpfulness = benchmark.metrics
    assert correctness.actual_answer == "={{ $json.result.answer }}"
    assert [(o, e.source) for o, e in correctness.item_expressions().values()] == [
        ("actualAnswer", "={{ $json.result.answer }}"),
        ("expectedAnswer", "={{ $json.expected_output }}"),
    ]
    assert set(helpfulness.item_expressions()) == {"actual_output", "input"}

    bad = [
        {"metric": "correctness", "actualAnswer": "={{ $node['AI Agent'].json.output }}"},
        {"metric": "helpfulness", "userQuery": "={{ $json.input.trim() }}"},
        {"metric": "correctness", "expectedAnswer": "{{ $json.expected }}"},
        {"metric": "correctness", "userQuery": "={{ $json.input }}"},
    ]
    found = problems(tmp_path, with_changes(metrics=bad))
    assert found[0].startswith(
        "metrics[0] (correctness).actualAnswer: Value error, $node reads another node's output"
    )
    assert "supported: a fixed text, or '=' then text with {{ … }} blocks" in found[0]
    assert found[1].startswith("metrics[1] (helpfulness).userQuery: Value error, calling .trim(")
    assert found[2].startswith("metrics[2] (correctness).expectedAnswer: Value error,")
    assert "does not start with '='" in found[2]
    assert found[3].startswith("metrics[3] (correctness).userQuery: unknown field")


def test_turn_faithfulness_takes_a_retrieval_context(tmp_path):
    metric = {"metric": "turn_faithfulness", "retrievalContext": ["Refunds take 5 days."]}
    (config,) = load_benchmark(write(tmp_path, with_changes(metrics=[metric]))).metrics
    assert config.retrieval_context == ["Refunds take 5 days."]
    empty = {"metric": "turn_faithfulness", "retrievalContext": []}
    (problem,) = problems(tmp_path, with_changes(metrics=[empty]))
    assert problem.startswith("metrics[0] (turn_faithfulness).retrievalContext:")


def test_the_valid_base_document_is_unchanged():
    assert VALID["metrics"] == [{"metric": "exact_match"}]
