"""Runs labelled in an n8n Data Table and read back: the same steps on the fake and a real n8n."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from n8n_deepeval_pipeline.calibration.data_table_labels import export_to_table, records_from_table
from n8n_deepeval_pipeline.calibration.label_files import (
    LabelFileError,
    Scored,
    labels_from_records,
    sheet_rows,
)
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from tests.calibration.review_items_by_hand import HASH, ITEMS, item

NOW = datetime(2026, 6, 11, 9, 30, tzinfo=UTC)
METRICS = ("helpfulness", "bias")


def scored(items) -> Scored:
    return Scored(metrics=METRICS, pairs={(i.run_id, m): HASH for i in items for m in METRICS})


def labelled_in_n8n(client: N8nClient, name: str) -> None:
    """Export, label four rows as a person would in n8n's table view, export more, read back."""
    first = export_to_table(client, name, sheet_rows(ITEMS, blind=True), blind=True)
    assert (first.written, first.already_there) == (6, 0)
    columns = {column.name: column.type for column in client.find_data_table(name).columns}
    assert columns["runId"] == "string" and columns["runIndex"] == "number"
    assert "judgeScore" not in columns  # blind: the judge is not in the table at all
    given = {  # (row id, metric) → label as typed in n8n
        ("A1", "helpfulness"): "pass", ("A1", "bias"): "fail",
        ("A2", "helpfulness"): "1", ("A2", "bias"): "yes",
    }  # fmt: skip
    for (row, metric), label in given.items():
        run = f"{HASH}:{row}:0"
        client.upsert_row(
            first.table.id, {"runId": run, "metric": metric}, {"label": label, "reviewer": "ann"}
        )
    more = [*ITEMS, item("A3", 0)]
    again = export_to_table(client, name, sheet_rows(more, blind=True), blind=True)
    assert (again.written, again.already_there) == (2, 6)  # the labelled rows kept as they are
    records = records_from_table(client, name)
    labels, blank = labels_from_records(records, scored(more), name, None, "data_table", NOW)
    assert blank == 4
    assert sorted((x.run_id[-4:], x.metric, x.passed, x.reviewer) for x in labels) == [
        ("A1:0", "bias", False, "ann"), ("A1:0", "helpfulness", True, "ann"),
        ("A2:0", "bias", True, "ann"), ("A2:0", "helpfulness", True, "ann"),
    ]  # fmt: skip
    assert {x.source for x in labels} == {"data_table"}
    # a metric mistyped in the table is named by its row there
    (wrong,) = [r for r in client.rows(first.table.id) if r["runId"].endswith("A1:1")][:1]
    client.upsert_row(
        first.table.id,
        {"runId": wrong["runId"], "metric": wrong["metric"]},
        {"metric": "helpfulnes", "label": "pass", "reviewer": "ann"},
    )
    with pytest.raises(LabelFileError) as refused:
        labels_from_records(
            records_from_table(client, name), scored(more), name, None, "data_table", NOW
        )
    assert refused.value.problems == [
        f"row {wrong['id']}, field metric: unknown metric 'helpfulnes' (the benchmark's: "
        "helpfulness, bias)"
    ]
