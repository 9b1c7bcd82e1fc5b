"""Results written back to n8n Data Tables, with the seed's camelCase column names.

The seed's Aggregate and Consistency nodes write ``runId``, ``overallScore``,
``overallSuccess``, ``metrics`` (JSON text), … to a Data Table; so does this sink, to
a table it creates when it is missing, its column types declared by the row model.
``upsert`` replaces the rows of the same run (or case) and version, so a re-run writes no
duplicates; rows the table already holds as they are are not written again, so a write
cut off midway is completed by running the sink again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from types import UnionType
from typing import Any, NamedTuple, Union, get_args, get_origin

from n8n_deepeval_pipeline.benchmark.n8n_target import DataTableOutput
from n8n_deepeval_pipeline.n8n_api.client import (
    DataTableColumn,
    N8nApiError,
    N8nClient,
    equals_filter,
)
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


def _column_kind(annotation: Any) -> str:
    """A Data Table column type from a row field's type (None left out: nullable)."""
    # Only a union's members are kinds: dict[int, float]'s arguments are not (passAtK is text).
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    kinds = [kind for kind in members if kind is not type(None)] or [annotation]
    if all(kind is bool for kind in kinds):
        return "boolean"
    if all(kind in (int, float) for kind in kinds):
        return "number"
    if all(kind is datetime for kind in kinds):
        return "date"
    return "string"  # text, and lists and objects as JSON text


def declared_columns(model: type[TableRow]) -> dict[str, str]:
    """The table's columns (camelCase) and their types, declared by the row model.

    Read off the first rows written, a column whose first value was null became text, and
    later numbers were stored as text ("0").
    """
    return {
        _camel(name): _column_kind(field.annotation) for name, field in model.model_fields.items()
    }


class SinkWrite(NamedTuple):
    """What one write of a version's rows did."""

    written: int
    already_there: int  # rows the table held as they are: a resumed write skips them


def _unwritten(
    client: N8nClient, table_id: str, records: list[dict[str, Any]], keys: list[str]
) -> list[dict[str, Any]]:
    """The records the table does not hold as they are, for the versions they belong to."""
    versions = {record[keys[-1]] for record in records}
    held: dict[tuple[Any, ...], dict[str, Any]] = {}
    for version in versions:
        for stored in client.rows(table_id, equals_filter({keys[-1]: version})):
            held[tuple(stored.get(key) for key in keys)] = stored
    missing = []
    for record in records:
        row = held.get(tuple(record[key] for key in keys))
        if row is None or any(row.get(name) != value for name, value in record.items()):
            missing.append(record)
    return missing


def write_rows(
    client: N8nClient,
    output: DataTableOutput,
    rows: Sequence[TableRow],
    keys: tuple[str, ...],
    model: type[TableRow],
) -> SinkWrite:
    """Append or upsert the rows as the seed's nodes write them (renamed as configured).

    Resumable: rows the table already holds as they are are not written again, so a write
    cut off (an n8n outage) is completed by running it again.
    """
    records = [seed_record(row) for row in rows]
    renamed = [{output.columns.get(k, k): v for k, v in record.items()} for record in records]
    key_names = [output.columns.get(key, key) for key in keys]
    table = client.find_data_table(output.data_table)
    if table is None:
        columns = [
            DataTableColumn(name=output.columns.get(name, name), type=kind)
            for name, kind in declared_columns(model).items()
        ]
        table = client.create_data_table(output.data_table, columns)
    missing = _unwritten(client, table.id, renamed, key_names) if renamed else []
    written = 0
    try:
        if output.write_mode == "append":
            client.insert_rows(table.id, missing)
            written = len(missing)
        else:
            for record in missing:
                client.upsert_row(table.id, {key: record[key] for key in key_names}, record)
                written += 1
    except N8nApiError as error:
        raise N8nApiError(
            f"{output.data_table}: {written} of {len(missing)} rows written before {error} "
            "(run the sink again to write the rest)",
            error.status,
        ) from error
    return SinkWrite(written, len(renamed) - len(missing))
