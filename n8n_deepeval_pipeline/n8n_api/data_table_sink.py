"""Results written back to n8n Data Tables, with the seed's camelCase column names.

The seed's Aggregate and Consistency nodes write ``runId``, ``overallScore``,
``overallSuccess``, ``metrics`` (JSON text), … to a Data Table; so does this sink, to
a table it creates (typed columns) when it is missing. ``upsert`` replaces the rows of
the same run (or case) and version, so a re-run writes no duplicates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from n8n_deepeval_pipeline.benchmark.n8n_target import DataTableOutput
from n8n_deepeval_pipeline.n8n_api.client import DataTableColumn, N8nClient
from n8n_deepeval_pipeline.tables.rows import TableRow

# Key columns of an upsert, per table.
AGGREGATE_KEYS = ("runId", "workflowHash")
CONSISTENCY_KEYS = ("caseId", "workflowHash")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def seed_record(row: TableRow) -> dict[str, Any]:
    """The row with camelCase names; lists and objects as JSON text (Data Tables are flat)."""
    record = {}
    for name, value in row.model_dump().items():
        if isinstance(value, (list, dict)):
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif isinstance(value, datetime):
            value = value.isoformat()
        record[_camel(name)] = value
    return record


def _column_type(values: list[Any]) -> str:
    present = [value for value in values if value is not None]
    if present and all(isinstance(value, bool) for value in present):
        return "boolean"
    if present and all(isinstance(value, (int, float)) for value in present):
        return "number"
    return "string"


def write_rows(
    client: N8nClient, output: DataTableOutput, rows: Sequence[TableRow], keys: tuple[str, ...]
) -> int:
    """Append or upsert the rows as the seed's nodes write them (renamed as configured)."""
    records = [seed_record(row) for row in rows]
    renamed = [{output.columns.get(k, k): v for k, v in record.items()} for record in records]
    key_names = [output.columns.get(key, key) for key in keys]
    table = client.find_data_table(output.data_table)
    if table is None:
        names = list(renamed[0]) if renamed else []
        columns = [
            DataTableColumn(name=name, type=_column_type([r.get(name) for r in renamed]))
            for name in names
        ]
        table = client.create_data_table(output.data_table, columns)
    if output.write_mode == "append":
        client.insert_rows(table.id, renamed)
        return len(renamed)
    for record in renamed:
        client.upsert_row(table.id, {key: record[key] for key in key_names}, record)
    return len(renamed)
