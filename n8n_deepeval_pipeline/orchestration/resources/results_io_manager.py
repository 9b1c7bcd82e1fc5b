"""The DuckDB IO manager of the result tables, which follows their columns across versions.

A table written by an older version of the project may lack columns added since: they
are added (older rows read them as NULL) and rows are inserted by column name, never by
position. A column whose type changed cannot be migrated safely; the step stops and says
which file, table and column, and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg
import pandas as pd
from dagster._core.definitions.metadata import TableMetadataSet
from dagster._core.storage.db_io_manager import DbTypeHandler, TableSlice
from dagster_duckdb_pandas import DuckDBPandasIOManager, DuckDBPandasTypeHandler


class OutdatedTableError(dg.Failure):
    """A stored table whose columns the current rows cannot be written into."""


def stored_columns(connection: Any, schema: str, table: str) -> dict[str, str]:
    """Column name → DuckDB type of a stored table (empty when there is no table)."""
    rows = connection.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = ? and table_name = ? order by ordinal_position",
        [schema, table],
    ).fetchall()
    return dict(rows)


def _frame_columns(connection: Any, frame: pd.DataFrame) -> dict[str, str]:
    described = connection.execute("describe select * from frame").fetchall()
    return {name: kind for name, kind, *_ in described}


def migrate(connection: Any, schema: str, table: str, frame: pd.DataFrame) -> list[str]:
    """Add the frame's new columns to a stored table; return their names."""
    stored = stored_columns(connection, schema, table)
    if not stored:
        return []
    wanted = _frame_columns(connection, frame)
    changed = {
        name: (stored[name], kind)
        for name, kind in wanted.items()
        if name in stored and stored[name] != kind
    }
    if changed:
        name, (old, new) = next(iter(changed.items()))
        database = connection.execute("select current_database()").fetchone()[0]
        raise OutdatedTableError(
            f"table {schema}.{table} in DuckDB database {database!r} was written by an older "
            f"version of n8n-deepeval-pipeline: column {name} is {old}, now {new}. Move the "
            "database file aside to keep its rows (N8N_DEEPEVAL_DUCKDB picks another), or "
            "drop the table, and run again."
        )
    added = [name for name in wanted if name not in stored]
    for name in added:
        connection.execute(f'alter table {schema}.{table} add column "{name}" {wanted[name]}')
    return added


class MigratingPandasTypeHandler(DuckDBPandasTypeHandler):
    """Pandas frames stored by column name into tables migrated to the frame's columns."""

    def handle_output(
        self,
        context: dg.OutputContext,
        table_slice: TableSlice,
        obj: pd.DataFrame,
        connection: Any,
    ) -> None:
        """Create the table, or migrate it and insert the rows by name."""
        schema, table = table_slice.schema, table_slice.table
        if obj.empty:
            context.log.warning(f"no rows for {schema}.{table} in this partition")
        elif stored_columns(connection, schema, table):
            added = migrate(connection, schema, table, obj)
            if added:
                context.log.info(f"{schema}.{table}: added columns {', '.join(added)}")
            connection.execute(f"insert into {schema}.{table} by name select * from obj")
        else:
            connection.execute(f"create table {schema}.{table} as select * from obj")
        context.add_output_metadata(
            dict(TableMetadataSet(partition_row_count=len(obj), storage_kind="duckdb"))
        )


class ResultsIOManager(DuckDBPandasIOManager):
    """Result tables in DuckDB, one schema per benchmark, partitions replaced on write."""

    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler[Any]]:
        """Only pandas frames, stored by column name."""
        return [MigratingPandasTypeHandler()]
