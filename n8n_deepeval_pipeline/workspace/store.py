"""The results store, read-only: DuckDB on this machine, PostgreSQL under the distributed ones.

A connection is opened for each request and closed after it, so that a run can take the
file between requests: DuckDB lets one process write a file, and while a run's step holds
it open read-write, opening it read-only fails. A short wait covers the moments a step
holds it; after that the page says the results are being written (``StoreBusy``), never
a traceback. Nothing here writes: DuckDB is opened read-only, PostgreSQL's session is
read-only.

The review page writes people's labels (never results) through the calibration back end's
label store, which opens the DuckDB file read-write. DuckDB lets one process hold a file
under one configuration at a time, so in this process the pages' reads and the label
store's writes take turns (``TURNS``): reads together, a write alone.

SQL is written once for both databases: ``?`` marks a parameter (it becomes psycopg2's
``%s``), so no statement holds a literal ``?`` or ``%``; identifiers are quoted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.storage_faults import error_messages, storage_fault
from n8n_deepeval_pipeline.tables.frames import from_records
from n8n_deepeval_pipeline.tables.rows import Row

# DuckDB's words when another process holds the file read-write (a run's step).
_LOCK_CONFLICT = "could not set lock on file"
# About a second and a half: a step holds the file for the moments it reads or writes a table.
OPEN_RETRY_DELAYS_S = (0.05, 0.1, 0.2, 0.4, 0.8)
_APPLICATION = "n8n-deepeval-workspace"


class StoreBusy(Exception):
    """A run is writing the results file: the page can be asked for again in a moment."""


class StoreUnreadable(Exception):
    """The store cannot be read (a corrupt file, a database that does not answer): one line."""


class Reader(Protocol):
    """Statements on one open, read-only connection."""

    def records(self, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """The statement's rows as column → value (``?`` marks each parameter)."""

    def columns(self, schema: str, name: str) -> list[str]:
        """A table's columns in order (none when it does not exist), read once a request."""


@dataclass(frozen=True)
class StoreSource:
    """Where the results are: a DuckDB file, or a PostgreSQL database."""

    kind: Literal["duckdb", "postgresql"]
    location: str  # the file's path, or the database's URL (never shown)

    @classmethod
    def configured(cls) -> StoreSource:
        """The store the profile names, as the runs write it (settings, environment)."""
        if settings.profile() == "local":
            return cls("duckdb", str(settings.database_path()))
        url = settings.postgres_url()
        if url is None:
            raise StoreUnreadable(
                f"{settings.PROFILE_ENV}={settings.profile()} keeps the results in PostgreSQL: "
                f"set {settings.POSTGRES_URL_ENV}"
            )
        return cls("postgresql", url)

    @property
    def described(self) -> str:
        """The store named for a page: the file, or the database without its credentials."""
        if self.kind == "duckdb":
            return self.location
        from urllib.parse import urlsplit

        parts = urlsplit(self.location)
        return f"PostgreSQL {parts.hostname}:{parts.port or 5432}{parts.path}"


class _ColumnsKept:
    """A table's columns asked once a request: pages ask for the same tables many times."""

    def __init__(self) -> None:
        self._columns: dict[tuple[str, str], list[str]] = {}

    def records(self, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        raise NotImplementedError

    def columns(self, schema: str, name: str) -> list[str]:
        key = (schema, name)
        if key not in self._columns:
            self._columns[key] = [
                str(record["column_name"])
                for record in self.records(
                    "select column_name from information_schema.columns "
                    "where table_schema = ? and table_name = ? order by ordinal_position",
                    [schema, name],
                )
            ]
        return self._columns[key]


class _DuckDbReader(_ColumnsKept):
    def __init__(self, connection: Any) -> None:
        super().__init__()
        self._connection = connection

    def records(self, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self._connection.execute(sql, list(parameters))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class _PostgresReader(_ColumnsKept):
    def __init__(self, connection: Any) -> None:
        super().__init__()
        self._connection = connection

    def records(self, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._connection.cursor() as cursor:
            cursor.execute(sql.replace("?", "%s"), list(parameters))
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class _EmptyReader(_ColumnsKept):
    """A DuckDB file no run has written yet: no schema, no table."""

    def records(self, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return []


class Turns:
    """Reads together, a write alone; a write waiting keeps new reads from starting."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._reading = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        """Hold a read turn for the block."""
        with self._changed:
            self._changed.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._reading += 1
        try:
            yield
        finally:
            with self._changed:
                self._reading -= 1
                self._changed.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the write turn for the block (never inside a read turn: it would wait forever)."""
        with self._changed:
            self._writers_waiting += 1
            self._changed.wait_for(lambda: not self._writing and not self._reading)
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()


TURNS = Turns()  # this process's DuckDB connections: the pages' reads, the labels' writes


@contextmanager
def writing_labels(source: StoreSource) -> Iterator[None]:
    """The block may open the store read-write (the label store): no page reads meanwhile."""
    if source.kind != "duckdb":  # PostgreSQL's sessions do not exclude each other
        yield
        return
    with TURNS.write():
        yield


@contextmanager
def reading(source: StoreSource) -> Iterator[Reader]:
    """A read-only connection to the store for the block; closed after it."""
    if source.kind == "postgresql":
        with _postgres(source) as reader:
            yield reader
        return
    path = Path(source.location)
    with TURNS.read():
        if not path.exists():
            yield _EmptyReader()
            return
        connection = _duckdb_read_only(path)
        try:
            yield _DuckDbReader(connection)
        except Exception as error:
            _raise_unreadable(error, path)
            raise
        finally:
            connection.close()


def _duckdb_read_only(path: Path) -> Any:
    """The file opened read-only, waiting a moment for a run's step that holds it."""
    import duckdb

    for delay in (*OPEN_RETRY_DELAYS_S, None):
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.Error as error:
            if _LOCK_CONFLICT not in str(error).lower():
                _raise_unreadable(error, path)
                raise
            if delay is None:
                raise StoreBusy(f"{path} is being written by a run") from None
        time.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _raise_unreadable(error: BaseException, path: Path) -> None:
    """A fault of the file itself (corrupt, truncated) said in its one line."""
    said = storage_fault(error_messages(error), path, [path.parent])
    if said is not None:
        raise StoreUnreadable(said) from None


@contextmanager
def _postgres(source: StoreSource) -> Iterator[Reader]:
    import psycopg2

    from n8n_deepeval_pipeline.tables.postgres_connection import psycopg2_connection

    try:
        connection = psycopg2_connection(source.location, _APPLICATION)
    except psycopg2.OperationalError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise StoreUnreadable(f"{source.described} does not answer: {first}") from None
    try:
        connection.set_session(readonly=True)
        yield _PostgresReader(connection)
    finally:
        connection.rollback()
        connection.close()


def quoted(name: str) -> str:
    """An identifier quoted for either database."""
    return '"' + name.replace('"', '""') + '"'


def table(schema: str, name: str) -> str:
    """``schema.table``, quoted."""
    return f"{quoted(schema)}.{quoted(name)}"


def placeholders(values: Sequence[Any]) -> str:
    """``?, ?, ?``: one parameter per value (at least one, so that ``in ()`` never occurs)."""
    return ", ".join("?" for _ in values) or "null"


def stored_tables(reader: Reader) -> dict[str, set[str]]:
    """Each schema's tables, as the results IO managers created them."""
    found: dict[str, set[str]] = {}
    for record in reader.records(
        "select table_schema, table_name from information_schema.tables "
        "where table_schema not in ('information_schema', 'pg_catalog')"
    ):
        found.setdefault(str(record["table_schema"]), set()).add(str(record["table_name"]))
    return found


def stored_columns(reader: Reader, schema: str, name: str) -> list[str]:
    """A table's columns in order (none when it does not exist)."""
    return reader.columns(schema, name)


def select_list(reader: Reader, schema: str, name: str, wanted: Sequence[str]) -> str:
    """``wanted`` columns for a select; those a table written before they existed lack read NULL."""
    present = set(stored_columns(reader, schema, name))
    return ", ".join(
        quoted(column) if column in present else f"null as {quoted(column)}" for column in wanted
    )


def model_rows(
    reader: Reader,
    model: type[Row],
    schema: str,
    where: str,
    parameters: Sequence[Any],
    leave_out: Collection[str] = (),
) -> list[Row]:
    """The table's rows that ``where`` selects, as its row model (JSON columns decoded).

    ``leave_out``: nullable columns a page does not show (long texts), read as None. A
    table not written yet has no rows.
    """
    columns = [c for c in stored_columns(reader, schema, model.table) if c not in leave_out]
    if not columns:
        return []
    selected = ", ".join(quoted(column) for column in columns)
    records = reader.records(
        f"select {selected} from {table(schema, model.table)} where {where}", parameters
    )
    return from_records(model, records, columns)
