"""The local instance's SQLite storage, with one pooled engine per database file.

Dagster's SQLite storages open a new engine and connection for every statement. The
example's run writes ~180 events and checks its partition ~170 times: each connection's
open and close (a WAL checkpoint when the last one closes) was ~3 s of a 15 s run.
These keep the files and tables Dagster's own write (an instance made by either reads
the other's) and keep each file's connections open between statements. WAL mode lets
the UI, the daemon and other runs use the same files meanwhile; a forked process makes
its own connections, never its parent's.

A file in WAL mode (Dagster switches every file it creates to it) is written with
SQLite's ``synchronous=NORMAL``, as the judge's shared state is: a commit no longer waits
for the disk (0.5-3 ms each here; the example's run waited ~370 times); a crashed process
loses nothing, and a power cut can lose only the last commits, never the file's
consistency.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.pool import QueuePool

# A connection for the storage's usual one-at-a-time use, a few more for the UI's threads.
_POOL = {"poolclass": QueuePool, "pool_size": 1, "max_overflow": 8}


class PooledEngines:
    """An engine per connection string and process, disposed with the storage."""

    def __init__(self) -> None:
        self._engines: dict[tuple[int, str], Engine] = {}
        self._lock = threading.Lock()

    def get(self, conn_string: str, **connect_args: Any) -> Engine:
        """The engine of ``conn_string`` in this process (made on first use)."""
        key = (os.getpid(), conn_string)
        with self._lock:
            engine = self._engines.get(key)
            if engine is None:
                engine = create_engine(conn_string, connect_args=connect_args, **_POOL)
                event.listen(engine, "connect", _commit_without_waiting_for_the_disk)
                self._engines[key] = engine
            return engine

    def dispose(self) -> None:
        """Close this process's connections (a parent's are left to the parent)."""
        with self._lock:
            for (pid, _), engine in list(self._engines.items()):
                engine.dispose(close=pid == os.getpid())
            self._engines.clear()


def _commit_without_waiting_for_the_disk(connection: Any, _record: Any) -> None:
    """``synchronous=NORMAL`` on a connection to a file in WAL mode.

    A file still empty is switched to WAL first, as Dagster switches it once it has made
    its tables: its tables are then made without a wait on the disk for each (a run's
    event log is a new file, ~90 waits). In rollback-journal mode NORMAL could leave a
    damaged file after a power cut: a file with tables kept in that mode keeps SQLite's
    default.
    """
    cursor = connection.cursor()
    try:
        (mode,) = cursor.execute("pragma journal_mode").fetchone()
        if str(mode).lower() != "wal" and cursor.execute("pragma page_count").fetchone() == (0,):
            (mode,) = cursor.execute("pragma journal_mode=wal").fetchone()
        if str(mode).lower() == "wal":
            cursor.execute("pragma synchronous=normal")
    finally:
        cursor.close()


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as connection, connection.begin():
        yield connection


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's per-run event log shards and index, each file's connections kept open."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines = PooledEngines()
        self._tables: set[str] = set()  # tables the index has: none is ever dropped
        super().__init__(base_dir, inst_data=inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engines.get(
                self.conn_string_for_shard(shard), timeout=SQLITE_BUSY_TIMEOUT_SECONDS
            )
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with _transaction(engine) as connection:
                yield connection

    def has_table(self, table_name: str) -> bool:
        """Whether the index has the table (asked before every partition query).

        A table found is remembered: migrations add tables, none drops one, and asking
        SQLite's schema each time was ~60 ms of a run's CPU.
        """
        if table_name in self._tables:
            return True
        engine = self._engines.get(
            self.conn_string_for_shard(INDEX_SHARD_NAME), timeout=SQLITE_BUSY_TIMEOUT_SECONDS
        )
        with engine.connect() as connection:
            found = bool(engine.dialect.has_table(connection, table_name))
        if found:
            self._tables.add(table_name)
        return found

    def dispose(self) -> None:
        """Stop the file watchers, then close the connections."""
        super().dispose()
        self._engines.dispose()


class _PooledFile:
    """``connect`` and ``dispose`` of a storage kept in one file (``_conn_string``)."""

    _conn_string: str
    _engines: PooledEngines

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A transaction on one of the file's open connections."""
        with _transaction(self._engines.get(self._conn_string)) as connection:
            yield connection

    def dispose(self) -> None:
        """Close the connections."""
        self._engines.dispose()


class PooledSqliteRunStorage(_PooledFile, SqliteRunStorage):
    """Dagster's run storage with its file's connections kept open."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines = PooledEngines()
        super().__init__(conn_string, inst_data=inst_data)


class PooledSqliteScheduleStorage(_PooledFile, SqliteScheduleStorage):
    """Dagster's schedule storage with its file's connections kept open."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines = PooledEngines()
        super().__init__(conn_string, inst_data=inst_data)


class PooledSqliteStorage(DagsterSqliteStorage):
    """The instance's storage: Dagster's SQLite layout under ``base_dir``, pooled.

    ``dagster.yaml`` names it as ``storage: custom:`` with ``base_dir`` from
    ``$DAGSTER_HOME``, the folder Dagster's default storage uses.
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        # Not Dagster's __init__: it would open its own three storages only to drop them.
        self.base_dir = base_dir
        self._run_storage = PooledSqliteRunStorage.from_local(os.path.join(base_dir, "history"))
        self._event_log_storage = PooledSqliteEventLogStorage(
            os.path.join(base_dir, "history", "runs")
        )
        self._schedule_storage = PooledSqliteScheduleStorage.from_local(
            os.path.join(base_dir, "schedules")
        )
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PooledSqliteStorage:
        """The storage ``dagster.yaml`` names (Dagster's own method makes its own class)."""
        return cls.from_local(str(config_value["base_dir"]), inst_data=inst_data)
