"""The results store read as the workspace reads it: read-only, beside a run that writes it."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from starlette.testclient import TestClient

from n8n_deepeval_pipeline.workspace import create_app
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.store import (
    OPEN_RETRY_DELAYS_S,
    StoreBusy,
    StoreSource,
    StoreUnreadable,
    reading,
)
from tests.workspace.conftest import BENCHMARK


@contextmanager
def held_for_writing(database: Path) -> Iterator[None]:
    """Another process holds the file open read-write, as a run's step does while it writes."""
    code = (
        "import duckdb, sys; connection = duckdb.connect(sys.argv[1]); "
        "print('held', flush=True); sys.stdin.readline()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # its readline returns: it closes the file and exits
        holder.wait(timeout=30)


def test_a_run_holding_the_file_makes_the_page_say_so_and_ask_again(generated):
    client = TestClient(create_app(generated.source, generated.files))
    with held_for_writing(generated.database):
        started = time.monotonic()
        with pytest.raises(StoreBusy), reading(generated.source):
            pass
        waited = time.monotonic() - started
        answer = client.get(f"/benchmarks/{BENCHMARK}")
    # it waited out the moments a step holds the file, then said so
    assert waited >= sum(OPEN_RETRY_DELAYS_S)
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "3"
    assert "Results are being written" in answer.text
    assert '<meta http-equiv="refresh" content="3">' in answer.text
    assert "Traceback" not in answer.text
    # the run let go of the file: the same address shows the benchmark
    again = client.get(f"/benchmarks/{BENCHMARK}")
    assert again.status_code == 200 and "3 versions scored" in again.text


def test_the_store_is_only_read(generated):
    before = hashlib.sha256(generated.database.read_bytes()).hexdigest()
    client = TestClient(create_app(generated.source, generated.files))
    for path in ("/", f"/benchmarks/{BENCHMARK}", f"/benchmarks/{BENCHMARK}/compare"):
        assert client.get(path).status_code == 200
    with reading(generated.source) as reader, pytest.raises(duckdb.Error, match="read-only"):
        reader.records(f"create table {BENCHMARK}.written as select 1 as one")
    assert hashlib.sha256(generated.database.read_bytes()).hexdigest() == before


def test_no_results_yet_is_a_page_that_says_what_to_do(tmp_path):
    source = StoreSource("duckdb", str(tmp_path / "results.duckdb"))
    answer = TestClient(create_app(source, BenchmarkFiles([]))).get("/")
    assert answer.status_code == 200
    assert "No results in" in answer.text and "n8n-deepeval run" in answer.text
    assert not (tmp_path / "results.duckdb").exists()  # looking made no file


def test_a_corrupt_file_is_named_in_one_line(tmp_path):
    database = tmp_path / "results.duckdb"
    database.write_bytes(b"DUCK" + bytes(8188))
    source = StoreSource("duckdb", str(database))
    with (
        pytest.raises(StoreUnreadable, match="the database is corrupt or truncated"),
        reading(source),
    ):
        pass
    answer = TestClient(create_app(source, BenchmarkFiles([]))).get("/")
    assert answer.status_code == 503
    assert f"{database}: the database is corrupt or truncated" in answer.text
