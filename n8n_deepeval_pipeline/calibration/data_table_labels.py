"""Runs to label in an n8n Data Table, so a team labels in n8n's own table view.

The same rows as a labels file (``label_files``), with camelCase column names as n8n's
tables have them (``runId``, ``judgeScore``, …). An export adds only the (run, metric)
rows the table does not hold yet, so labels already given there are never overwritten and
exporting again tops the table up. An import reads every row back and checks it as a file's
rows are checked, each problem naming the table's row id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from n8n_deepeval_pipeline.calibration.label_files import COLUMNS, JUDGE_COLUMNS, SheetRecord
from n8n_deepeval_pipeline.n8n_api.client import DataTable, DataTableColumn

_NUMBERS = frozenset({"run_index", "judge_score", "threshold", "rating"})
_BOOLEANS = frozenset({"judge_passed"})
# What n8n adds to every row: not labels-file columns.
_N8N_COLUMNS = frozenset({"id", "createdAt", "updatedAt"})


class DataTables(Protocol):
    """The part of n8n's Data Tables API labels use (``N8nClient`` has it)."""

    def find_data_table(self, id_or_name: str) -> DataTable | None:
        """The table with this id or name."""

    def create_data_table(self, name: str, columns: list[DataTableColumn]) -> DataTable:
        """A new table with typed columns."""

    def rows(self, table_id: str, filter_: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every row of the table."""

    def insert_rows(self, table_id: str, rows: list[dict[str, Any]]) -> None:
        """Append rows."""


def camel(name: str) -> str:
    """A labels-file column as an n8n column: ``judge_score`` → ``judgeScore``."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


_SNAKE = {camel(name): name for name in COLUMNS}


def _kind(name: str) -> str:
    if name in _NUMBERS:
        return "number"
    if name in _BOOLEANS:
        return "boolean"
    return "string"


def table_columns(blind: bool) -> list[DataTableColumn]:
    """The typed columns of a labels table (without the judge's when ``blind``)."""
    return [
        DataTableColumn(name=camel(name), type=_kind(name))
        for name in COLUMNS
        if not (blind and name in JUDGE_COLUMNS)
    ]


class TableExport(NamedTuple):
    """What an export to a Data Table did."""

    table: DataTable
    written: int
    already_there: int


def _cell(name: str, value: Any) -> Any:
    if value is None or name in _NUMBERS or name in _BOOLEANS:
        return value
    return str(value)


def export_to_table(
    client: DataTables, name: str, rows: Sequence[dict[str, Any]], blind: bool
) -> TableExport:
    """Add the rows the table lacks (by run and metric), creating the table if needed."""
    table = client.find_data_table(name)
    if table is None:
        table = client.create_data_table(name, table_columns(blind))
    held = {(str(row.get("runId")), str(row.get("metric"))) for row in client.rows(table.id)}
    missing = [row for row in rows if (str(row["run_id"]), str(row["metric"])) not in held]
    known = {column.name for column in table.columns} or {c.name for c in table_columns(blind)}
    client.insert_rows(
        table.id,
        [{camel(k): _cell(k, v) for k, v in row.items() if camel(k) in known} for row in missing],
    )
    return TableExport(table, len(missing), len(rows) - len(missing))


def records_from_table(client: DataTables, name: str) -> list[SheetRecord]:
    """Every row of a labels table, as records to check (each named by its row id)."""
    table = client.find_data_table(name)
    if table is None:
        raise ValueError(f"n8n has no Data Table {name!r}")
    return [
        SheetRecord(
            where=f"row {row.get('id', number)}",
            values={_SNAKE.get(k, k): v for k, v in row.items() if k not in _N8N_COLUMNS},
        )
        for number, row in enumerate(client.rows(table.id), start=1)
    ]
