import json

import pytest

from n8n_deepeval_pipeline.benchmark.config import DatasetConfig
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.tables.dataset_file import load_dataset_rows

HASH = "d" * 64

CSV = """id,input,expectedOutput,expectedTools,split
r1,What is 2+2?,4,calculator,test
r2,Where is A1?,Shipped,"order_lookup, calculator",train
r3,Hi,Hello,[],test
r4,Tools?,Yes,"[""a"", ""b""]",test
"""


def config(tmp_path, **options):
    path = tmp_path / "rows.csv"
    if not path.exists():
        path.write_text(CSV, encoding="utf-8")
    mapping = {
        "input": "input",
        "expectedOutput": "expectedOutput",
        "expectedTools": "expectedTools",
    }
    return DatasetConfig.model_validate({"path": path, "columnMapping": mapping, **options})


def test_columns_are_mapped_and_list_fields_parsed(tmp_path):
    rows = load_dataset_rows(config(tmp_path), HASH)
    assert [row.row_id for row in rows] == ["r1", "r2", "r3", "r4"]
    first = rows[0]
    assert (first.input, first.expected_output, first.expected_tools) == (
        "What is 2+2?",
        "4",
        ["calculator"],
    )
    assert (first.context, first.label, first.turns, first.workflow_hash) == (
        None,
        None,
        None,
        HASH,
    )
    assert rows[1].expected_tools == ["order_lookup", "calculator"]
    assert rows[2].expected_tools == []
    assert rows[3].expected_tools == ["a", "b"]
    assert rows[1].raw["split"] == "train"


def test_filters_then_row_cap(tmp_path):
    rows = load_dataset_rows(config(tmp_path, filters=["split=test"], maxRows=2), HASH)
    assert [row.row_id for row in rows] == ["r1", "r3"]
    assert [row.position for row in rows] == [1, 3]
    assert (
        len(
            load_dataset_rows(
                config(tmp_path, filters={"split": "test"}, limitRows=False, maxRows=1), HASH
            )
        )
        == 3
    )


def test_jsonl_and_parquet_give_the_same_rows(tmp_path):
    records = [{"id": 1, "input": "a", "expectedOutput": "b", "expectedTools": ["t"]}]
    (tmp_path / "rows.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records), encoding="utf-8"
    )
    import pandas as pd

    pd.DataFrame(records).to_parquet(tmp_path / "rows.parquet")
    mapping = {
        "input": "input",
        "expectedOutput": "expectedOutput",
        "expectedTools": "expectedTools",
    }
    for name in ("rows.jsonl", "rows.parquet"):
        (row,) = load_dataset_rows(DatasetConfig(path=tmp_path / name, columnMapping=mapping), HASH)
        assert (row.row_id, row.input, row.expected_output, row.expected_tools) == (
            "1",
            "a",
            "b",
            ["t"],
        )


def test_rows_without_id_or_with_repeated_id_are_named(tmp_path):
    (tmp_path / "rows.csv").write_text(
        "id,input,expectedOutput\n,a,b\nx,c,d\nx,e,f\n", encoding="utf-8"
    )
    with pytest.raises(BenchmarkConfigError) as caught:
        load_dataset_rows(DatasetConfig(path=tmp_path / "rows.csv"), HASH)
    assert caught.value.problems == [
        "row 1: no id in column 'id'",
        "row 3: id 'x' repeats row 2",
    ]


def test_unknown_columns_are_named_with_the_available_ones(tmp_path):
    with pytest.raises(BenchmarkConfigError) as caught:
        load_dataset_rows(
            config(tmp_path, idColumn="key", columnMapping={"input": "question"}), HASH
        )
    assert caught.value.problems == [
        "dataset.columnMapping.input: column 'question' is not in the file "
        "(columns: expectedOutput, expectedTools, id, input, split)",
        "dataset.idColumn: column 'key' is not in the file "
        "(columns: expectedOutput, expectedTools, id, input, split)",
    ]


def dataset(path):
    return DatasetConfig(path=path, columnMapping={"input": "input"})


def problems_of(config):
    with pytest.raises(BenchmarkConfigError) as caught:
        load_dataset_rows(config, HASH)
    return caught.value.problems


def test_broken_jsonl_lines_are_named_by_number(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"id": "r1", "input": "a"}\n\n{"id": "r2", "input": "b",}\n["r3", "c"]\n', encoding="utf-8"
    )
    assert problems_of(dataset(path)) == [
        "line 3: not valid JSON: Expecting property name enclosed in double quotes (column 27)",
        "line 4: must be a JSON object {…}, one record per line",
    ]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("rows.csv", b"id,input\nr1,caf\xe9\n"),
        ("rows.jsonl", b'{"id": "r1", "input": "a"}\n{"id": "r2", "input": "caf\xe9"}\n'),
    ],
)
def test_text_that_is_not_utf8_is_named_by_line(tmp_path, name, content):
    (tmp_path / name).write_bytes(content)
    assert problems_of(dataset(tmp_path / name)) == [
        "line 2: not UTF-8 text (byte 0xe9): save it as UTF-8"
    ]


@pytest.mark.parametrize("name", ["rows.csv", "rows.jsonl"])
def test_a_utf8_byte_order_mark_is_not_part_of_the_first_column(tmp_path, name):
    text = "id,input\nr1,a\n" if name.endswith("csv") else '{"id": "r1", "input": "a"}\n'
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + text.encode())
    (row,) = load_dataset_rows(dataset(tmp_path / name), HASH)
    assert (row.row_id, row.input) == ("r1", "a")


@pytest.mark.parametrize("name", ["rows.csv", "rows.jsonl", "rows.parquet"])
def test_an_empty_file_is_named_as_empty(tmp_path, name):
    (tmp_path / name).write_text(" \n", encoding="utf-8")
    assert problems_of(dataset(tmp_path / name)) == ["the file is empty"]


@pytest.mark.parametrize("name", ["rows.csv", "rows"])
def test_a_directory_is_named_as_a_directory_whatever_its_suffix(tmp_path, name):
    (tmp_path / name).mkdir()
    assert problems_of(dataset(tmp_path / name)) == ["is a directory, not a file"]


def test_errors_name_the_dataset_file_and_the_field_that_points_to_it(tmp_path):
    with pytest.raises(BenchmarkConfigError) as caught:
        load_dataset_rows(dataset(tmp_path / "missing.csv"), HASH)
    assert (
        str(caught.value)
        == f"{tmp_path / 'missing.csv'}: invalid dataset (dataset.path)\n  - file not found"
    )


def test_a_row_nested_too_deep_is_refused_by_line_or_row_not_a_recursion_error(tmp_path):
    deep = "[" * 3000 + '"x"' + "]" * 3000
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(f'{{"id": "r1", "input": "a"}}\n{{"id": "r2", "input": {deep}}}\n', "utf-8")
    assert problems_of(dataset(jsonl)) == ["line 2: nested deeper than 100 levels"]
    # the row's object and 99 lists in it are 100 levels: taken; one more is not
    jsonl.write_text(f'{{"id": "r1", "input": {"[" * 99}"x"{"]" * 99}}}\n', "utf-8")
    assert len(load_dataset_rows(dataset(jsonl), HASH)) == 1
    jsonl.write_text(f'{{"id": "r1", "input": {"[" * 100}"x"{"]" * 100}}}\n', "utf-8")
    assert problems_of(dataset(jsonl)) == [
        "line 1: nested deeper than 100 levels at input" + "[0]" * 99
    ]
    csv = tmp_path / "rows.csv"  # JSON text in a cell, read as a list field
    csv.write_text(f'id,input,expectedOutput,expectedTools\nr1,hi,4,"{deep}"\n', "utf-8")
    assert problems_of(config(tmp_path, path=csv)) == [
        "row 1 (id 'r1'): column expectedTools: nested deeper than 100 levels"
    ]


def test_a_lone_surrogate_is_refused_where_it_is(tmp_path):
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text('{"id": "r1", "input": {"text": ["ok", "bad \\ud800 here"]}}\n', "utf-8")
    assert problems_of(dataset(jsonl)) == [
        "line 1: \\ud800 at input.text[1] is half of a UTF-16 surrogate pair, not a character: "
        "write the character itself"
    ]
    # a Data Table's rows come from n8n's JSON: the same check
    records = [{"id": "r1", "input": "fine"}, {"id": "r2", "input": "\udc00"}]
    with pytest.raises(BenchmarkConfigError) as caught:
        load_dataset_rows(DatasetConfig(dataTable="t1", columnMapping={"input": "input"}),
                          HASH, records)  # fmt: skip
    assert caught.value.problems == [
        "row 2: \\udc00 at input is half of a UTF-16 surrogate pair, not a character: "
        "write the character itself"
    ]


@pytest.mark.parametrize(
    ("row_id", "shown", "code"),
    [
        ("r\x001", "'r\\x001'", "0000"),
        ("order-\u202e1a", "'order-\\u202e1a'", "202E"),
        ("t\x1b]0;pwned\x07", "'t\\x1b]0;pwned\\x07'", "001B"),
    ],
)
def test_an_id_with_a_control_character_is_refused(tmp_path, row_id, shown, code):
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(json.dumps({"id": row_id, "input": "a"}) + "\n", "utf-8")
    assert problems_of(dataset(jsonl)) == [
        f"row 1: id {shown} in column 'id' holds the control character U+{code}, which a "
        "terminal would obey: ids are printed and stored, use letters, digits and punctuation"
    ]
