"""A simulated benchmark's dataset: every row a conversational golden."""

import pytest

from n8n_deepeval_pipeline.benchmark.config import DatasetConfig
from n8n_deepeval_pipeline.config.errors import DataFileError
from n8n_deepeval_pipeline.tables.dataset_file import load_dataset_rows

HASH = "e" * 64
GOLDENS = """id,scenario,expectedOutcome,userDescription,context,turns
g1,A student asks what 6*7 is,The student learns 42,a hurried student,"[""6*7 is 42""]",
g2,A hiker asks the weather,The hiker knows it,,,"[{""role"":""user"",""content"":""Hi""}]"
"""


def dataset(tmp_path, text=GOLDENS, **options):
    path = tmp_path / "goldens.csv"
    path.write_text(text, encoding="utf-8")
    return DatasetConfig.model_validate({"path": path, "columnMapping": {}, **options})


def test_the_golden_columns_are_read_by_their_names(tmp_path):
    first, second = load_dataset_rows(dataset(tmp_path), HASH, conversational=True)
    assert (first.scenario, first.expected_outcome, first.user_description) == (
        "A student asks what 6*7 is",
        "The student learns 42",
        "a hurried student",
    )
    assert first.context == ["6*7 is 42"] and first.turns is None and first.input is None
    assert not second.user_description and second.context is None  # empty cells
    assert second.turns == [{"role": "user", "content": "Hi"}]


def test_a_mapped_column_wins_over_the_default_name(tmp_path):
    text = "id,situation,scenario\ng1,mapped,by name\n"
    options = {"columnMapping": {"scenario": "situation"}}
    (row,) = load_dataset_rows(dataset(tmp_path, text, **options), HASH, conversational=True)
    assert row.scenario == "mapped"


def test_a_golden_without_a_scenario_is_refused_by_row_and_column(tmp_path):
    text = "id,scenario,expectedOutcome\ng1,Asks,Told\ng2,,Told\n"
    with pytest.raises(DataFileError) as caught:
        load_dataset_rows(dataset(tmp_path, text), HASH, conversational=True)
    message = str(caught.value)
    assert str(tmp_path / "goldens.csv") in message
    assert (
        "row 2 (id 'g2'): a conversational golden needs a scenario (column 'scenario' is empty"
        in message
    )
    with pytest.raises(DataFileError) as caught:
        load_dataset_rows(
            dataset(tmp_path, "id,expectedOutcome\ng1,Told\n"), HASH, conversational=True
        )
    assert "(column 'scenario' is missing" in str(caught.value)


def test_without_simulation_the_rows_are_read_as_before(tmp_path):
    (row,) = load_dataset_rows(
        dataset(tmp_path, "id,input,scenario\nr1,Hi,ignored\n", columnMapping={"input": "input"}),
        HASH,
    )
    assert (row.input, row.scenario) == ("Hi", None)
