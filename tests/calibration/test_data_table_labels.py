"""Labels kept in an n8n Data Table, round trip against the fake n8n API (a test double)."""

from n8n_deepeval_pipeline.calibration.data_table_labels import camel, table_columns
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from tests.calibration.data_table_scenario import labelled_in_n8n
from tests.n8n_api.fake_n8n import FakeN8nApi


def test_runs_labelled_in_a_data_table_come_back_as_labels():
    with FakeN8nApi() as fake, N8nClient(fake.base_url, "key") as client:
        labelled_in_n8n(client, "support labels")
        (table,) = fake.tables.values()
        assert len(table["rows"]) == 8


def test_columns_are_camel_case_and_typed():
    assert camel("judge_passed") == "judgePassed"
    typed = {column.name: column.type for column in table_columns(blind=False)}
    assert (typed["judgeScore"], typed["judgePassed"], typed["rating"], typed["label"]) == (
        "number", "boolean", "number", "string")  # fmt: skip
