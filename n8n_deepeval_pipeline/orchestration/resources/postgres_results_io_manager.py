"""The PostgreSQL IO manager of the result tables (the ``distributed`` profile).

The same contract as the DuckDB one, through Dagster's own ``DbIOManager``: one schema per
benchmark, one table per asset, every row carrying its full ``workflow_hash``, and the
partition's rows selected by the asset's ``partition_expr`` (``left(workflow_hash, 12)``,
which PostgreSQL evaluates as DuckDB does). Re-materialising a partition deletes its rows
and inserts the new ones in one transaction, so a failed write keeps the old rows and
readers never see a half-written partition. Columns added since a table was written are
added (older rows read them as NULL); a column whose type changed stops the step with what
to do. Writers of one table take a transaction-scoped advisory lock, so steps on several
machines may write partitions of the same table at once. An asset whose metadata names an
``upsert_key`` column (online scores, a few at a time into a day's partition) is written
as in DuckDB: its rows replace the stored rows with the same key and leave the others.

The URL is written for SQLAlchemy as Dagster's PostgreSQL storage needs it
(``postgresql+psycopg2://user:password@host:port/database``); the driver part is dropped
for libpq. psycopg2 comes with the ``distributed`` extra (dagster-postgres needs it too)
and is imported when a step first connects.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import dagster as dg
import pandas as pd
from dagster._core.storage.db_io_manager import (
    DbClient,
    DbIOManager,
    DbTypeHandler,
    TablePartitionDimension,
    TableSlice,
    static_where_clause,
)
from pydantic import Field

from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import (
    columns_to_add,
    report_written,
    upsert_key,
)
from n8n_deepeval_pipeline.tables.postgres_connection import transaction

# pandas dtype kind → PostgreSQL type, as information_schema.columns names it.
_SQL_TYPES = {
    "i": "bigint",
    "u": "bigint",
    "f": "double precision",
    "b": "boolean",
    "M": "timestamp with time zone",
}
_TEXT = "text"
# PostgreSQL type → the pandas dtype the rows are read back as (as to_frame typed them).
_PANDAS_DTYPES = {
    "bigint": "Int64",
    "integer": "Int64",
    "smallint": "Int64",
    "double precision": "Float64",
    "real": "Float64",
    "numeric": "Float64",
    "boolean": "boolean",
    "text": "string",
    "character varying": "string",
}
_TIMESTAMP_TZ = "timestamp with time zone"
_INSERT_PAGE_ROWS = 1000


def _quote(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _qualified(table_slice: TableSlice) -> str:
    return f"{_quote(table_slice.schema)}.{_quote(table_slice.table)}"


def sql_type(dtype: Any) -> str:
    """The PostgreSQL column type of a pandas dtype (text for strings and anything else)."""
    return _SQL_TYPES.get(getattr(dtype, "kind", "O"), _TEXT)


def frame_columns(frame: pd.DataFrame) -> dict[str, str]:
    """Column name → PostgreSQL type of a frame's columns, in order."""
    return {str(name): sql_type(dtype) for name, dtype in frame.dtypes.items()}


def stored_columns(connection: Any, schema: str, table: str) -> dict[str, str]:
    """Column name → PostgreSQL type of a stored table (empty when there is no table)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_schema = %s and table_name = %s order by ordinal_position",
            [schema, table],
        )
        return {str(name): str(kind) for name, kind in cursor.fetchall()}


def _database_name(connection: Any) -> str:
    """The database the connection is to, as an outdated table's message names it."""
    with connection.cursor() as cursor:
        cursor.execute("select current_database()")
        return f"PostgreSQL database {str(cursor.fetchone()[0])!r}"


def version_index(schema: str, table: str, columns: Collection[str]) -> str | None:
    """The index of a table's rows by version (and run), made with the table and on older ones.

    A version's rows are read by their ``workflow_hash`` (the results workspace reads a few
    versions of tables holding every version's rows): without it, each read scans them all.
    With the ``run_id`` beside it, a version's runs are counted and joined from the index
    alone. None: the table has no ``workflow_hash``.
    """
    if "workflow_hash" not in columns:
        return None
    keys = "workflow_hash, run_id" if "run_id" in columns else "workflow_hash"
    name = _quote(f"{table}_by_version")
    return f"create index if not exists {name} on {_quote(schema)}.{_quote(table)} ({keys})"


def migrate(connection: Any, schema: str, table: str, frame: pd.DataFrame) -> list[str]:
    """Create the table, or add the frame's new columns to it; the names of added columns.

    Either way the table gets its index by version, if it has a ``workflow_hash``.
    """
    wanted = frame_columns(frame)
    stored = stored_columns(connection, schema, table)
    qualified = f"{_quote(schema)}.{_quote(table)}"
    with connection.cursor() as cursor:
        if not stored:
            columns = ", ".join(f"{_quote(name)} {kind}" for name, kind in wanted.items())
            cursor.execute(f"create table {qualified} ({columns})")
            _index_by_version(cursor, schema, table, wanted)
            return []
        advice = (
            "Rename the table to keep its rows (alter table ... rename), or drop it, and run again."
        )
        added = columns_to_add(
            stored, wanted, f"{schema}.{table}", lambda: _database_name(connection), advice
        )
        for name in added:
            cursor.execute(f"alter table {qualified} add column {_quote(name)} {wanted[name]}")
        _index_by_version(cursor, schema, table, [*stored, *added])
    return added


def _index_by_version(cursor: Any, schema: str, table: str, columns: Collection[str]) -> None:
    statement = version_index(schema, table, columns)
    if statement is not None:
        cursor.execute(statement)


def _python_value(value: Any) -> Any:
    """A value psycopg2 can adapt: NULL for every missing marker, plain Python scalars."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    item = getattr(value, "item", None)  # numpy scalars
    return item() if callable(item) else value


def insert_rows(connection: Any, schema: str, table: str, frame: pd.DataFrame) -> None:
    """Insert the frame's rows by column name, a page of rows per statement."""
    from psycopg2.extras import execute_values

    if frame.empty:
        return
    names = ", ".join(_quote(str(name)) for name in frame.columns)
    rows = [
        tuple(_python_value(value) for value in record)
        for record in frame.astype(object).itertuples(index=False, name=None)
    ]
    with connection.cursor() as cursor:
        execute_values(
            cursor,
            f"insert into {_quote(schema)}.{_quote(table)} ({names}) values %s",
            rows,
            page_size=_INSERT_PAGE_ROWS,
        )


def delete_keys(connection: Any, schema: str, table: str, key: str, frame: pd.DataFrame) -> int:
    """Delete the stored rows whose ``key`` is one of the frame's; how many were deleted."""
    keys = sorted({str(value) for value in frame[key].dropna()})
    if not keys:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"delete from {_quote(schema)}.{_quote(table)} where {_quote(key)} = any(%s)", [keys]
        )
        return int(cursor.rowcount)


def read_rows(connection: Any, table_slice: TableSlice) -> pd.DataFrame:
    """The slice's rows, typed as to_frame types them (an absent table has none)."""
    stored = stored_columns(connection, table_slice.schema, table_slice.table)
    if not stored:
        return pd.DataFrame()
    wanted = list(table_slice.columns or stored)
    with connection.cursor() as cursor:
        cursor.execute(PostgresClient.get_select_statement(table_slice))
        frame = pd.DataFrame.from_records(cursor.fetchall(), columns=wanted)
    dtypes: dict[str, Any] = {}
    for name in wanted:
        kind = stored.get(name, _TEXT)
        if kind == _TIMESTAMP_TZ:
            frame[name] = pd.to_datetime(frame[name], utc=True).astype("datetime64[us, UTC]")
        else:
            dtypes[name] = _PANDAS_DTYPES.get(kind, "object")
    return frame.astype(dtypes)


class PostgresPandasTypeHandler(DbTypeHandler[pd.DataFrame]):
    """Pandas frames stored by column name into tables migrated to the frame's columns."""

    def handle_output(
        self,
        context: dg.OutputContext,
        table_slice: TableSlice,
        obj: pd.DataFrame,
        connection: Any,
    ) -> None:
        """Create or migrate the table, then insert the rows (replacing those of their keys)."""
        added = migrate(connection, table_slice.schema, table_slice.table, obj)
        key = upsert_key(context)
        if key is not None:
            delete_keys(connection, table_slice.schema, table_slice.table, key, obj)
        insert_rows(connection, table_slice.schema, table_slice.table, obj)
        report_written(context, table_slice, obj, added, "postgres")

    def load_input(
        self, context: dg.InputContext, table_slice: TableSlice, connection: Any
    ) -> pd.DataFrame:
        """The partition's rows (none for an input without partitions to read)."""
        if table_slice.partition_dimensions and not context.asset_partition_keys:
            return pd.DataFrame()
        return read_rows(connection, table_slice)

    @property
    def supported_types(self) -> Sequence[type[object]]:
        """Only pandas frames."""
        return [pd.DataFrame]


class PostgresClient(DbClient[Any]):
    """Connections to one database; each write is one transaction under a per-table lock."""

    def __init__(self, url: str) -> None:
        self.url = url

    @contextmanager
    def connect(  # type: ignore[override]
        self, context: dg.OutputContext | dg.InputContext, table_slice: TableSlice
    ) -> Iterator[Any]:
        """A connection whose work commits at the end, or rolls back on error; then closed."""
        with transaction(self.url, "n8n-deepeval") as connection:
            yield connection

    @staticmethod
    def ensure_schema_exists(
        context: dg.OutputContext, table_slice: TableSlice, connection: Any
    ) -> None:
        """Lock the table for this transaction, then create its schema if it is missing."""
        with connection.cursor() as cursor:
            # Writers of one table (several machines, several partitions) take turns.
            cursor.execute(
                "select pg_advisory_xact_lock(hashtext(%s))",
                [f"n8n_deepeval:{table_slice.schema}.{table_slice.table}"],
            )
            cursor.execute("select 1 from pg_namespace where nspname = %s", [table_slice.schema])
            if cursor.fetchone() is None:
                # Two writers may create the schema at once: one waits for the other.
                cursor.execute(
                    "select pg_advisory_xact_lock(hashtext(%s))",
                    [f"n8n_deepeval:schema:{table_slice.schema}"],
                )
                cursor.execute(f"create schema if not exists {_quote(table_slice.schema)}")

    @staticmethod
    def delete_table_slice(
        context: dg.OutputContext, table_slice: TableSlice, connection: Any
    ) -> None:
        """Delete the partition's rows (all rows of an unpartitioned table), if it exists.

        Not for an asset written row by row: its rows replace only those of their key.
        """
        if upsert_key(context) is not None:
            return
        if not stored_columns(connection, table_slice.schema, table_slice.table):
            return
        with connection.cursor() as cursor:
            cursor.execute(f"delete from {_qualified(table_slice)}{_where(table_slice)}")

    @staticmethod
    def get_select_statement(table_slice: TableSlice) -> str:
        """The query that reads the slice back."""
        columns = (
            ", ".join(_quote(name) for name in table_slice.columns) if table_slice.columns else "*"
        )
        return f"select {columns} from {_qualified(table_slice)}{_where(table_slice)}"

    @staticmethod
    def get_table_name(table_slice: TableSlice) -> str:
        """``schema.table``: the database is named by a URL that may carry a password."""
        return f"{table_slice.schema}.{table_slice.table}"


def _where(table_slice: TableSlice) -> str:
    dimensions = table_slice.partition_dimensions or []
    if not dimensions:
        return ""
    return " where " + " and ".join(_dimension_clause(dimension) for dimension in dimensions)


def _dimension_clause(dimension: TablePartitionDimension) -> str:
    """A version key's rows, or a time window's (days: the times, with their UTC offset)."""
    if isinstance(dimension.partitions, dg.TimeWindow):
        start, end = dimension.partitions
        column = dimension.partition_expr
        return f"{column} >= '{start.isoformat()}' and {column} < '{end.isoformat()}'"
    return static_where_clause(dimension)


def check_storage_url(url: str) -> None:
    """Reject a URL Dagster's PostgreSQL storage would open with a driver it cannot use.

    SQLAlchemy 2.1 opens a bare ``postgresql://`` URL with psycopg 3, whose server-side
    parameters break dagster-postgres (it is written for psycopg2; dagster-io/dagster#33958).
    """
    scheme = url.partition("://")[0]
    if scheme != "postgresql+psycopg2":
        raise ValueError(
            f"the PostgreSQL URL must start with postgresql+psycopg2:// (it starts with "
            f"{scheme}://): Dagster's PostgreSQL storage needs the psycopg2 driver"
        )


def database_of(url: str) -> str:
    """The database a ``postgresql://`` URL names (for messages; never the URL itself)."""
    return urlsplit(url).path.lstrip("/") or "postgres"


class PostgresResultsIOManager(dg.ConfigurableIOManagerFactory):
    """Result tables in PostgreSQL, one schema per benchmark, partitions replaced on write.

    An asset with an ``upsert_key`` has its rows replaced by key instead.
    """

    url: str = Field(
        description="libpq connection URL (postgresql://user:password@host:port/database)."
    )

    def create_io_manager(self, context: Any) -> DbIOManager:
        """Dagster's database IO manager with the PostgreSQL client."""
        return DbIOManager(
            db_client=PostgresClient(self.url),
            database=database_of(self.url),
            schema=None,
            type_handlers=[PostgresPandasTypeHandler()],
            default_load_type=pd.DataFrame,
            io_manager_name="PostgresResultsIOManager",
        )
