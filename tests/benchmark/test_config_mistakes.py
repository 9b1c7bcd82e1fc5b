"""Mistakes in a benchmark file that used to pass silently or end in a traceback."""

import duckdb
import pytest

from n8n_deepeval_pipeline import BenchmarkConfigError, load_benchmark
from n8n_deepeval_pipeline.config.schema_names import SQL_KEYWORDS
from tests.benchmark.test_config import problems, with_changes, write

FILE = """\
name: demo
workflow: workflow.json
dataset: {path: rows.csv}
target: {type: recorded, outputs: outputs.jsonl}
metrics:
  - metric: bias
    threshold: 0.3
"""


def text_problems(tmp_path, text):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenchmarkConfigError) as caught:
        load_benchmark(path)
    assert str(caught.value).startswith(f"{path}: invalid benchmark\n")
    return caught.value.problems


def test_a_key_given_twice_is_refused_naming_its_line(tmp_path):
    assert text_problems(tmp_path, FILE + "name: other\n") == [
        "not valid YAML: line 8, column 1: key 'name' repeats (first on line 1): keep one"
    ]
    assert text_problems(tmp_path, FILE + "    threshold: 0.9\n") == [
        "not valid YAML: line 8, column 5: key 'threshold' repeats (first on line 7): keep one"
    ]


def test_a_merge_key_may_still_be_overridden(tmp_path):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(FILE + "    <<: {threshold: 0.9, strictMode: false}\n", encoding="utf-8")
    assert load_benchmark(path).metrics[0].threshold == 0.3


def test_yaml_syntax_errors_name_the_file_and_line_not_a_unicode_string(tmp_path):
    (problem,) = text_problems(tmp_path, FILE.replace("{path: rows.csv}", "{path: rows.csv"))
    assert problem == (
        "not valid YAML: line 4, column 7: expected ',' or '}', but got ':' "
        "(while parsing a flow mapping on line 3)"
    )


@pytest.mark.parametrize(
    ("nesting", "column"),
    [("[" * 5000 + "]" * 5000, 112), ("{a: " * 1000 + "1" + "}" * 1000, 406)],
)
def test_deep_nesting_is_a_clean_error_not_a_recursion_error(tmp_path, nesting, column):
    assert text_problems(tmp_path, f"description: {nesting}\n" + FILE) == [
        f"not valid YAML: line 1, column {column}: nested deeper than 100 levels"
    ]


def test_deeply_nested_block_maps_are_refused_too(tmp_path):
    nested = "".join("  " * depth + f"k{depth}:\n" for depth in range(1000))
    (problem,) = text_problems(tmp_path, FILE + "description:\n" + nested)
    assert problem.endswith(": nested deeper than 100 levels")


@pytest.mark.parametrize("name", ["select", "from", "left", "information_schema", "pg_results"])
def test_names_that_cannot_be_a_schema_are_refused_at_validate(tmp_path, name):
    (problem,) = problems(tmp_path, with_changes(name=name))
    assert problem.startswith(f"name: Value error, {name!r} is ")
    assert problem.endswith(": choose another")


def test_the_keyword_list_is_duckdbs_reserved_and_type_function_keywords():
    found = duckdb.connect().execute(
        "select keyword_name from duckdb_keywords() "
        "where keyword_category in ('reserved', 'type_function')"
    )
    assert {keyword for (keyword,) in found.fetchall()} == SQL_KEYWORDS


def test_booleans_and_numbers_are_not_converted_from_other_types(tmp_path):
    found = problems(
        tmp_path,
        with_changes(
            runsPerRow="3", metrics=[{"metric": "bias", "threshold": True, "strictMode": "yes"}]
        ),
    )
    assert found == [
        "runsPerRow: Input should be a valid integer",
        "metrics[0] (bias).threshold: Input should be a valid number",
        "metrics[0] (bias).strictMode: Input should be a valid boolean",
    ]


def test_a_whole_number_is_still_a_number(tmp_path):
    benchmark = load_benchmark(
        write(tmp_path, with_changes(metrics=[{"metric": "bias", "threshold": 1}]))
    )
    assert benchmark.metrics[0].threshold == 1.0


def test_empty_criteria_and_label_are_refused(tmp_path):
    g_eval = {"metric": "g_eval", "name": "x", "criteria": "", "evaluationParams": ["INPUT"]}
    found = problems(tmp_path, with_changes(metrics=[g_eval, {"metric": "bias", "label": " "}]))
    assert found == [
        "metrics[0] (g_eval).criteria: Value error, must not be empty",
        "metrics[1] (bias).label: Value error, must not be empty",
    ]


def test_a_schedule_out_of_range_is_refused(tmp_path):
    assert problems(tmp_path, with_changes(schedule="61 * * * *")) == [
        "schedule: Value error, minute '61': 61 is not in 0-59"
    ]


def test_a_tool_both_allowed_and_denied_is_refused(tmp_path):
    permission = {"metric": "tool_permission", "allowedTools": ["a", "b"], "deniedTools": ["b"]}
    assert problems(tmp_path, with_changes(metrics=[permission])) == [
        "metrics[0] (tool_permission): Value error, ['b'] in both 'allowedTools' and "
        "'deniedTools': keep each in one"
    ]


def test_a_metric_without_its_slug_says_so(tmp_path):
    assert problems(tmp_path, with_changes(metrics=[{"threshold": 0.5}])) == [
        "metrics[0].metric: missing: each metric entry names its slug, e.g. 'metric: g_eval' "
        "(n8n-deepeval metrics lists all)"
    ]
