"""The DuckDB IO manager of the result tables, which follows their columns across versions.

A table written by an older version of the project may lack columns added since: they
are added (older rows read them as NULL) and rows are inserted by column name, never by
position. A column whose type changed cannot be migrated safely; the step stops and says
which file, table and column, and what to do. A partition is replaced in one
transaction, so a write that fails keeps the rows it was to replace. An asset whose
metadata names an ``upsert_key`` column is written row by row instead: its rows replace
the stored rows with the same key and leave the partition's others (rows that arrive a
few at a time, such as online scores; a re-run writes no duplicates).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
from dagster._core.definitions.metadata import TableMetadataSet
from dagster._core.storage.db_io_manager import DbIOManager, DbTypeHandler, TableSlice
from dagster_duckdb.io_manager import DuckDbClient
from dagster_duckdb_pandas import DuckDBPandasIOManager, DuckDBPandasTypeHandler

from n8n_deepeval_pipeline.settings import PRIVATE_FILE_MODE

UPSERT_KEY = "upsert_key"


def upsert_key(context: dg.OutputContext) -> str | None:
    """The key column of an asset written row by row (None: partitions are replaced)."""
    key = (context.definition_metadata or {}).get(UPSERT_KEY)
    return None if key is None else str(key)


class OutdatedTableError(dg.Failure):
    """A stored table whose columns the current rows cannot be written into."""


def stored_columns(connection: Any, schema: str, table: str) -> dict[str, str]:
    """Column name → DuckDB type of a stored table (empty when there is no table).

    Asked of ``duckdb_columns()``, what ``information_schema.columns`` is a view of: a
    third of its time (~1 ms less a question, and a run asks ~50).
    """
    rows = connection.execute(
        "select column_name, data_type from duckdb_columns() "
        "where database_name = current_database() and schema_name = ? and table_name = ? "
        "order by column_index",
        [schema, table],
    ).fetchall()
    return dict(rows)


def _frame_columns(connection: Any, frame: pd.DataFrame) -> dict[str, str]:
    described = connection.execute("describe select * from frame").fetchall()
    return {name: kind for name, kind, *_ in described}


def columns_to_add(
    stored: dict[str, str],
    wanted: dict[str, str],
    table: str,
    database: Callable[[], str],
    advice: str,
) -> list[str]:
    """The frame's columns a stored table lacks; a column whose type changed stops the step.

    ``table`` is ``schema.table``; ``database`` names the database (asked only to say
    where the outdated table is); ``advice`` says what to do about it.
    """
    for name, kind in wanted.items():
        if name in stored and stored[name] != kind:
            raise OutdatedTableError(
                f"table {table} in {database()} was written by an older version of "
                f"n8n-deepeval-pipeline: column {name} is {stored[name]}, now {kind}. {advice}"
            )
    return [name for name in wanted if name not in stored]


def migrate(
    connection: Any, schema: str, table: str, frame: pd.DataFrame, stored: dict[str, str]
) -> list[str]:
    """Add the frame's new columns to a stored table (its ``stored`` columns); their names."""

    def database() -> str:
        name = connection.execute("select current_database()").fetchone()[0]
        return f"DuckDB database {name!r}"

    wanted = _frame_columns(connection, frame)
    advice = (
        "Move the database file aside to keep its rows (N8N_DEEPEVAL_DUCKDB picks another), "
        "or drop the table, and run again."
    )
    added = columns_to_add(stored, wanted, f"{schema}.{table}", database, advice)
    for name in added:
        connection.execute(f'alter table {schema}.{table} add column "{name}" {wanted[name]}')
    return added


def report_written(
    context: dg.OutputContext,
    table_slice: TableSlice,
    rows: pd.DataFrame,
    added: list[str],
    storage_kind: str,
) -> None:
    """Log the columns a write added (or that it had no rows); the partition's row count."""
    schema, table = table_slice.schema, table_slice.table
    if added:
        context.log.info(f"{schema}.{table}: added columns {', '.join(added)}")
    if rows.empty:
        context.log.info(f"no rows for {schema}.{table} in this partition")
    context.add_output_metadata(
        dict(TableMetadataSet(partition_row_count=len(rows), storage_kind=storage_kind))
    )


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
        added: list[str] = []
        stored = {} if obj.empty else stored_columns(connection, schema, table)
        if stored:
            added = migrate(connection, schema, table, obj, stored)
            key = upsert_key(context)
            if key is not None:
                connection.execute(
                    f'delete from {schema}.{table} where "{key}" in (select "{key}" from obj)'
                )
            connection.execute(f"insert into {schema}.{table} by name select * from obj")
        elif not obj.empty:
            connection.execute(f"create table {schema}.{table} as select * from obj")
        report_written(context, table_slice, obj, added, "duckdb")

    def load_input(
        self, context: dg.InputContext, table_slice: TableSlice, connection: Any
    ) -> pd.DataFrame:
        """The slice's rows; a table never written has none (as the PostgreSQL store reads it).

        An empty partition creates no table: a red team whose attacks have not been played in
        any version yet has no results table for the report to read.
        """
        if not stored_columns(connection, table_slice.schema, table_slice.table):
            return pd.DataFrame()
        frame: pd.DataFrame = super().load_input(context, table_slice, connection)
        return frame


LINGER_S = 0.25
"""How long a run in this process keeps a results database open after its last use."""


class OpenDatabases:
    """Keeps a DuckDB database open for ``linger_s`` after its last use, while asked to.

    Opening a database costs ~30 ms of CPU (DuckDB builds its catalog), and a run opens
    it for every input and output: ~40 times in the example. While one connection is
    open, DuckDB gives the next one the same database. Holding it only this long lets
    other processes (the UI's runs, another CLI run) take the file between steps; their
    connects retry meanwhile. Only a run in this process asks (``kept_open``): any other
    code here may open the file with a configuration of its own afterwards.

    A database whose linger ran out is closed on its timer's thread; the run's end waits
    for every such close. A close still running while the interpreter shuts down was
    DuckDB's C++ unwound by the thread's forced exit (``terminate called after throwing
    an instance of ''``, exit -6), after the run had stored everything: so the timers are
    joined, and are not daemon threads, which the interpreter would not wait for.
    """

    def __init__(self, linger_s: float = LINGER_S) -> None:
        self._linger_s = linger_s
        self._held: dict[str, tuple[Any, threading.Timer]] = {}
        self._timers: list[threading.Timer] = []  # started since the first run asked
        self._lock = threading.Lock()
        self._asked = 0

    @contextmanager
    def kept_open(self) -> Iterator[None]:
        """Hold databases between uses meanwhile; close them all at the end."""
        with self._lock:
            self._asked += 1
        try:
            yield
        finally:
            with self._lock:
                self._asked -= 1
                held = [] if self._asked else list(self._held)
                timers, self._timers = ([], self._timers) if self._asked else (self._timers, [])
            for database in held:
                self._release(database)
            for timer in timers:  # cancelled ones end at once; one closing a database, after
                timer.join()

    def hold(self, database: str, config: dict[str, Any]) -> None:
        """Keep ``database`` (opened as ``config`` says) open until ``linger_s`` from now."""
        with self._lock:
            if not self._asked:
                return
            held = self._held.pop(database, None)
            if held is not None:
                anchor, timer = held
                timer.cancel()
            else:
                try:
                    anchor = duckdb.connect(database, read_only=False, config=config)
                except duckdb.ConnectionException:  # opened otherwise here: nothing to keep
                    return
            timer = threading.Timer(self._linger_s, self._release, (database,))
            self._held[database] = (anchor, timer)
            self._timers.append(timer)
            timer.start()

    def is_held(self, database: str) -> bool:
        """Whether ``database`` is held open."""
        return database in self._held

    def _release(self, database: str) -> None:
        with self._lock:
            held = self._held.pop(database, None)
        if held is not None:
            held[1].cancel()
            held[0].close()


OPEN_DATABASES = OpenDatabases()


# DuckDB's words when another process holds the file: the one failure worth waiting out.
_LOCK_CONFLICT = "could not set lock on file"
LOCK_WAIT_DELAYS_S = tuple(0.1 * 2**attempt for attempt in range(10))  # ~100 s, as Dagster's


def connect_waiting_for_locks(database: str, config: dict[str, Any]) -> Any:
    """A read-write connection; a lock another process holds is waited for, nothing else.

    Dagster's own connect retries every I/O error for ~100 s, a damaged file's too, so a
    truncated database was named only after that; it fails at once here.
    """
    for delay in (*LOCK_WAIT_DELAYS_S, None):
        try:
            return duckdb.connect(database=database, read_only=False, config=config)
        except (RuntimeError, duckdb.IOException) as error:
            if delay is None or _LOCK_CONFLICT not in str(error).lower():
                raise
        time.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


class AtomicDuckDbClient(DuckDbClient):
    """Replaces a partition's rows in one transaction: a failed write keeps the old ones."""

    @staticmethod
    @contextmanager
    def connect(context: Any, table_slice: Any) -> Iterator[Any]:
        """A connection whose work commits at the end, or rolls back and closes on error."""
        database = Path(context.resource_config["database"])
        new = not database.exists()
        connection = connect_waiting_for_locks(str(database), _connection_config(context))
        if new:  # DuckDB refuses an empty file: make the new one private before any row
            database.chmod(PRIVATE_FILE_MODE)
        connection.execute("begin transaction")
        try:
            yield connection
        except BaseException:
            connection.execute("rollback")
            connection.close()
            raise
        connection.execute("commit")
        OPEN_DATABASES.hold(str(database), _connection_config(context))
        connection.close()

    @staticmethod
    def delete_table_slice(
        context: dg.OutputContext, table_slice: TableSlice, connection: Any
    ) -> None:
        """Delete the partition's rows, if there is a table (an error would end the transaction).

        Not for an asset written row by row: its rows replace only those of their key.
        """
        if upsert_key(context) is None and stored_columns(
            connection, table_slice.schema, table_slice.table
        ):
            DuckDbClient.delete_table_slice(context, table_slice, connection)


def _connection_config(context: Any) -> dict[str, Any]:
    """The config Dagster's client opens the database with (a second one must match)."""
    return {"custom_user_agent": "dagster", **context.resource_config["connection_config"]}


class ResultsIOManager(DuckDBPandasIOManager):
    """Result tables in DuckDB, one schema per benchmark, partitions replaced on write."""

    def create_io_manager(self, context: Any) -> DbIOManager:
        """Dagster's DuckDB IO manager with the transactional client."""
        return DbIOManager(
            db_client=AtomicDuckDbClient(),
            database=self.database,
            schema=self.schema_,
            type_handlers=self.type_handlers(),
            default_load_type=self.default_load_type(),
            io_manager_name="ResultsIOManager",
        )

    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler[Any]]:
        """Only pandas frames, stored by column name."""
        return [MigratingPandasTypeHandler()]
