"""Fixtures of the Dagster tests: a private home and DuckDB file, and reading it back."""

from pathlib import Path

import duckdb
import pytest

PARTITIONS = "support_agent__workflow_hash"


@pytest.fixture
def environment(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "db" / "results.duckdb"))
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "2")
    return tmp_path / "db" / "results.duckdb"


def query(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as connection:
        return connection.execute(sql).fetchall()
