"""The local instance's SQLite storage: Dagster's files, each file's connections kept open."""

import multiprocessing
import sqlite3
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from n8n_deepeval_pipeline.orchestration.local_runner import prepare_dagster_home
from n8n_deepeval_pipeline.orchestration.sqlite_storage import (
    PooledEngines,
    PooledSqliteEventLogStorage,
    PooledSqliteRunStorage,
)

PARTITIONS = "versions"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", "unset")
    monkeypatch.delenv("DAGSTER_HOME")  # prepare_dagster_home() sets it; restored afterwards
    monkeypatch.delenv("N8N_DEEPEVAL_PROFILE", raising=False)
    return prepare_dagster_home()


@dg.asset(partitions_def=dg.DynamicPartitionsDefinition(name=PARTITIONS))
def scored(context: dg.AssetExecutionContext) -> None:
    context.log.info(f"scored {context.partition_key}")


def _materialise(instance: dg.DagsterInstance, key: str) -> str:
    instance.add_dynamic_partitions(PARTITIONS, [key])
    result = dg.materialize([scored], instance=instance, partition_key=key)
    assert result.success
    return result.run_id


def _plain(home: Path) -> dg.DagsterInstance:
    """Dagster's own SQLite instance on the same files (a config folder without dagster.yaml)."""
    plain_config = home.parent / "plain-config"
    plain_config.mkdir(exist_ok=True)
    return dg.DagsterInstance.from_ref(
        InstanceRef.from_dir(str(home), config_dir=str(plain_config))
    )


def _counting_connects(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = sqlite3.dbapi2.connect  # what SQLAlchemy's SQLite dialect calls

    def connect(database, *args, **kwargs):
        opened.append(str(database))
        return real(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3.dbapi2, "connect", connect)
    return opened


def test_the_generated_instance_uses_the_pooled_storage_on_dagsters_own_files(home):
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
        assert isinstance(instance.run_storage, PooledSqliteRunStorage)
        run_id = _materialise(instance, "a1")
    assert (home / "history" / "runs.db").exists()
    assert (home / "history" / "runs" / f"{run_id}.db").exists()
    # Dagster's own SQLite storage reads what the pooled one wrote, and the other way round.
    with _plain(home) as plain:
        assert type(plain.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert plain.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS
        assert plain.has_dynamic_partition(PARTITIONS, "a1")
        materialised = plain.get_latest_materialization_event(dg.AssetKey("scored"))
        assert materialised is not None and materialised.run_id == run_id
        other = _materialise(plain, "b2")
    with dg.DagsterInstance.get() as instance:
        assert {run.run_id for run in instance.get_runs()} == {run_id, other}
        assert instance.get_dynamic_partitions(PARTITIONS) == ["a1", "b2"]


def test_statements_reuse_a_connection_where_dagster_opens_one_each(home, monkeypatch):
    with dg.DagsterInstance.get() as instance:
        _materialise(instance, "a1")
        opened = _counting_connects(monkeypatch)
        for _ in range(20):
            assert instance.has_dynamic_partition(PARTITIONS, "a1")
            assert instance.get_runs(limit=1)
        assert opened == []  # the run's connections are still open and serve them all
    with _plain(home) as plain:
        opened.clear()
        for _ in range(20):
            assert plain.has_dynamic_partition(PARTITIONS, "a1")
        assert len(opened) >= 20


def test_a_forked_process_makes_its_own_connections(tmp_path, monkeypatch):
    engines = PooledEngines()
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    parent = engines.get(url)
    monkeypatch.setattr("os.getpid", lambda: -1)  # as a forked child sees it
    child = engines.get(url)
    assert child is not parent
    with child.connect() as connection:
        assert connection.exec_driver_sql("select 1").scalar() == 1
    engines.dispose()  # closes only the "child's" connections


def _materialise_in_a_process(home: str, key: str) -> None:
    import os

    os.environ["DAGSTER_HOME"] = home
    with dg.DagsterInstance.get() as instance:
        for index in range(5):
            _materialise(instance, f"{key}{index}")


def test_two_processes_write_the_same_instance_at_once(home):
    with dg.DagsterInstance.get():
        pass  # created first, as local_instance() does under its lock
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_materialise_in_a_process, args=(str(home), key))
        for key in ("a", "b")
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [writer.exitcode for writer in writers] == [0, 0]
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert len(runs) == 10
        assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}
        assert sorted(instance.get_dynamic_partitions(PARTITIONS)) == sorted(
            f"{key}{index}" for key in "ab" for index in range(5)
        )


def test_the_index_is_asked_for_a_table_once_it_has_it_and_again_while_it_lacks_it(
    home, monkeypatch
):
    with dg.DagsterInstance.get() as instance:
        storage = instance.event_log_storage
        dialect_calls: list[str] = []
        engine = storage._engines.get(storage.conn_string_for_shard("index"))
        real = type(engine.dialect).has_table

        def counted(dialect, connection, table_name, *args, **kwargs):
            dialect_calls.append(table_name)
            return real(dialect, connection, table_name, *args, **kwargs)

        monkeypatch.setattr(type(engine.dialect), "has_table", counted)
        assert [storage.has_table("dynamic_partitions") for _ in range(3)] == [True] * 3
        assert [storage.has_table("no_such_table") for _ in range(2)] == [False] * 2
    assert dialect_calls == ["dynamic_partitions", "no_such_table", "no_such_table"]


def _pragma(engine, name: str) -> object:
    with engine.connect() as connection:
        return connection.exec_driver_sql(f"pragma {name}").scalar()


def test_a_run_writes_its_event_log_in_wal_mode_without_waiting_for_the_disk(home):
    with dg.DagsterInstance.get() as instance:
        run_id = _materialise(instance, "a1")
        storage = instance.event_log_storage
        for shard in (run_id, "index"):
            engine = storage._engines.get(storage.conn_string_for_shard(shard))
            assert _pragma(engine, "journal_mode") == "wal"
            assert _pragma(engine, "synchronous") == 1  # NORMAL
        runs = instance.run_storage
        assert _pragma(runs._engines.get(runs._conn_string), "synchronous") == 1
    # Dagster's own storage reads the run's file as it reads one it made itself.
    with _plain(home) as plain:
        assert plain.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS
        assert any(record.step_key == "scored" for record in plain.all_logs(run_id))


def test_a_file_kept_in_rollback_journal_mode_keeps_waiting_for_the_disk(tmp_path):
    path = tmp_path / "journal.db"
    with sqlite3.connect(path) as made:  # tables in SQLite's default (rollback) mode
        made.execute("create table kept (value text)")
    engines = PooledEngines()
    engine = engines.get(f"sqlite:///{path}")
    assert _pragma(engine, "journal_mode") == "delete"
    assert _pragma(engine, "synchronous") == 2  # FULL, SQLite's default
    empty = engines.get(f"sqlite:///{tmp_path / 'new.db'}")
    assert (_pragma(empty, "journal_mode"), _pragma(empty, "synchronous")) == ("wal", 1)
    engines.dispose()
