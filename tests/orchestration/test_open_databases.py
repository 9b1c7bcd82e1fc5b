"""A run in this process keeps its results database open between uses, and only briefly."""

import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import duckdb
import pytest

from n8n_deepeval_pipeline.orchestration.resources import results_io_manager
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import OpenDatabases

CONFIG = {"custom_user_agent": "dagster"}  # as Dagster's DuckDB client opens it


@pytest.fixture
def database(tmp_path) -> str:
    path = str(tmp_path / "results.duckdb")
    with duckdb.connect(path) as connection:
        connection.execute("create table scores as select 1 as score")
    return path


def _another_process_writes(database: str) -> bool:
    """Whether a second process can take the file read-write right now."""
    code = (
        "import duckdb, sys\n"
        "try:\n"
        f"    duckdb.connect({database!r}).execute('insert into scores values (2)').close()\n"
        "except duckdb.IOException:\n"
        "    sys.exit(3)\n"
    )
    return subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_database_is_held_only_while_a_run_asks(database):
    databases = OpenDatabases(linger_s=60)
    with duckdb.connect(database, config=CONFIG):
        databases.hold(database, CONFIG)
    assert not databases.is_held(database)  # no run asked: nothing kept
    with databases.kept_open():
        with duckdb.connect(database, config=CONFIG):
            databases.hold(database, CONFIG)
        assert databases.is_held(database)
        assert not _another_process_writes(database)  # held: others wait (Dagster retries)


def test_a_held_database_is_released_after_the_linger_while_the_run_goes_on(database):
    databases = OpenDatabases(linger_s=0.2)
    with databases.kept_open():
        with duckdb.connect(database, config=CONFIG):
            databases.hold(database, CONFIG)
        assert databases.is_held(database)
        deadline = time.monotonic() + 10
        while databases.is_held(database) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not databases.is_held(database)
        assert _another_process_writes(database)


def test_each_use_restarts_the_linger_and_the_run_end_releases_at_once(database):
    databases = OpenDatabases(linger_s=60)
    with databases.kept_open():
        for _ in range(3):
            with duckdb.connect(database, config=CONFIG) as connection:
                connection.execute("select count(*) from scores").fetchall()
                databases.hold(database, CONFIG)
        assert databases.is_held(database)
    assert not databases.is_held(database)
    assert _another_process_writes(database)
    with duckdb.connect(database, read_only=True) as connection:
        assert connection.execute("select count(*) from scores").fetchone() == (2,)


def test_a_database_opened_otherwise_here_is_left_alone(database):
    databases = OpenDatabases(linger_s=60)
    with databases.kept_open(), duckdb.connect(database):  # another configuration
        databases.hold(database, CONFIG)
        assert not databases.is_held(database)


def test_the_results_client_holds_what_it_opened_as_dagster_opens_it(database, monkeypatch):
    databases = OpenDatabases(linger_s=60)
    monkeypatch.setattr(results_io_manager, "OPEN_DATABASES", databases)
    context = SimpleNamespace(resource_config={"database": database, "connection_config": {}})
    with databases.kept_open():
        with results_io_manager.AtomicDuckDbClient.connect(context, None) as connection:
            connection.execute("insert into scores values (5)")
        assert databases.is_held(database)  # the same configuration as Dagster's client
        with results_io_manager.AtomicDuckDbClient.connect(context, None) as connection:
            assert connection.execute("select sum(score) from scores").fetchone() == (6,)


def _context(database: str) -> SimpleNamespace:
    return SimpleNamespace(resource_config={"database": database, "connection_config": {}})


def _counted_connects(monkeypatch) -> list[str]:
    """Every duckdb.connect call from here on (and no real waiting between retries)."""
    calls: list[str] = []
    real = duckdb.connect

    def counted(*args, **kwargs):
        calls.append(str(kwargs.get("database", args[0] if args else "")))
        return real(*args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counted)
    monkeypatch.setattr(time, "sleep", lambda _seconds: None)
    return calls


@pytest.mark.parametrize("size", [0, 1000, 100_000])
def test_a_truncated_database_fails_at_the_first_connect_not_after_retries(
    database, tmp_path, monkeypatch, size
):
    whole = tmp_path / "whole.duckdb"
    with duckdb.connect(str(whole)) as connection:  # big enough for 100 KB to cut it short
        connection.execute("create table rows as select range as n from range(200000)")
    truncated = tmp_path / "truncated.duckdb"
    truncated.write_bytes(whole.read_bytes()[:size])
    calls = _counted_connects(monkeypatch)
    client = results_io_manager.AtomicDuckDbClient()
    with pytest.raises(duckdb.IOException), client.connect(_context(str(truncated)), None):
        pass
    assert len(calls) == 1  # a damaged file stays damaged: never waited for


def test_a_database_another_process_holds_is_waited_for(database, monkeypatch):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, time; c = duckdb.connect({database!r}); print('held', flush=True); "
         "time.sleep(2)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    calls = _counted_connects(monkeypatch)
    real_sleep = []
    monkeypatch.setattr(time, "sleep", lambda seconds: real_sleep.append(seconds) or holder.wait())
    client = results_io_manager.AtomicDuckDbClient()
    with client.connect(_context(database), None) as connection:
        assert connection.execute("select count(*) from scores").fetchone() == (1,)
    assert len(calls) >= 2 and real_sleep  # the lock was waited for, then the file opened


_RUN_ENDS_AS_ITS_LINGER_RUNS_OUT = """
import sys, time, duckdb
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import OpenDatabases
database = sys.argv[1]
databases = OpenDatabases(linger_s=0.05)
with databases.kept_open():
    with duckdb.connect(database) as connection:  # enough rows for the close to checkpoint
        connection.execute("create table rows as select range as n, repeat('x', 200) as s "
                           "from range(300000)")
        databases.hold(database, {})
    time.sleep(0.05)  # the last step's linger runs out as the run ends
print("stored", flush=True)
"""


@pytest.mark.slow
def test_a_process_whose_run_ends_as_a_database_closes_exits_cleanly(tmp_path):
    # The closing timer was a daemon thread: the interpreter's shutdown unwound DuckDB's
    # close under it, and the process aborted (exit -6) after storing everything — a
    # variant's calling process did so in one run of five. It failed 19 times in 20 here.
    for attempt in range(3):
        database = tmp_path / f"results{attempt}.duckdb"
        ended = subprocess.run(
            [sys.executable, "-c", _RUN_ENDS_AS_ITS_LINGER_RUNS_OUT, str(database)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert (ended.returncode, ended.stdout, ended.stderr) == (0, "stored\n", "")
        with duckdb.connect(str(database), read_only=True) as connection:
            assert connection.execute("select count(*) from rows").fetchone() == (300000,)


def test_no_close_outlives_the_run_that_kept_its_database_open(database):
    databases = OpenDatabases(linger_s=0.01)
    before = set(threading.enumerate())  # another test's timers are not this run's
    with databases.kept_open():
        with duckdb.connect(database, config=CONFIG):
            databases.hold(database, CONFIG)
        time.sleep(0.01)
    lingering = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert [timer for timer in lingering if timer not in before] == []
    assert _another_process_writes(database)
