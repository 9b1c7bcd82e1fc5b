"""``<benchmark>.human_labels`` in the results store: DuckDB here, PostgreSQL for a fleet.

People's labels are the user's data, not a partition's output: no IO manager writes them,
so no re-run, re-score or backfill replaces them. Each write is one transaction (an
undo's removals with its restorations), committed before it returns (the review queue
writes a label the moment it is given).
The table is keyed by run, metric and reviewer; a label given again replaces the last one.
Reading joins each label with the score its run has now (``calibration.judged_reads``,
the statements the results workspace reads them with too), so agreement is measured
against the metric as it is configured today. A DuckDB file is opened only for each
statement's length, with the configuration Dagster's IO manager opens it with, so it never
keeps a run (here or in the UI) from the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.calibration.judged_reads import (
    ATTACK_METRIC,
    ATTACK_RUN,
    judged_labels,
    quoted,
)
from n8n_deepeval_pipeline.calibration.label_store import LabelKey, LabelStore
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import (
    connect_waiting_for_locks,
)
from n8n_deepeval_pipeline.settings import PRIVATE_FILE_MODE
from n8n_deepeval_pipeline.tables.postgres_connection import transaction
from n8n_deepeval_pipeline.tables.rows import HumanLabel

TABLE = HumanLabel.table
_COLUMNS = tuple(HumanLabel.model_fields)
_KEY = ("run_id", "metric", "reviewer")
# The configuration Dagster's DuckDB IO manager opens the file with: one process may hold
# one database under one configuration only.
DUCKDB_CONFIG = {"custom_user_agent": "dagster"}


Statement = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs one SQL statement with its values; the rows it returns (none for a write)."""


class SqlLabelStore(LabelStore):
    """The label store over one SQL connection per call; DuckDB and PostgreSQL differ in little.

    ``marker`` is the driver's parameter placeholder (``?`` or ``%s``).
    """

    marker = "?"

    def __init__(self, benchmark: Benchmark) -> None:
        self.benchmark = benchmark
        self.schema = benchmark.name

    @contextmanager
    def _cursor(self) -> Iterator[Statement]:
        """A statement runner inside one transaction, committed at the end."""
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text.replace("?", self.marker)

    @property
    def _table(self) -> str:
        return f"{quoted(self.schema)}.{TABLE}"

    def _create(self, run: Statement) -> None:
        run(f"create schema if not exists {quoted(self.schema)}", [])
        run(
            f"create table if not exists {self._table} ("
            "workflow_hash text not null, run_id text not null, metric text not null, "
            "reviewer text not null, passed boolean, rating integer, comment text, "
            "labelled_at timestamptz not null, source text not null, "
            "primary key (run_id, metric, reviewer))",
            [],
        )

    def upsert(self, labels: Sequence[HumanLabel]) -> None:
        """Write labels, replacing those of the same run, metric and reviewer; committed."""
        if not labels:
            return
        with self._cursor() as run:
            self._create(run)
            self._upsert(run, labels)

    def take_back(self, removed: Iterable[LabelKey], restored: Sequence[HumanLabel]) -> None:
        """Remove the labels of ``removed`` and write ``restored``, in one transaction."""
        statement = self._sql(
            f"delete from {self._table} where run_id = ? and metric = ? and reviewer = ?"
        )
        with self._cursor() as run:
            self._create(run)
            for key in removed:
                run(statement, list(key))
            self._upsert(run, restored)

    def _upsert(self, run: Statement, labels: Sequence[HumanLabel]) -> None:
        names = ", ".join(_COLUMNS)
        places = ", ".join("?" for _ in _COLUMNS)
        updates = ", ".join(f"{name} = excluded.{name}" for name in _COLUMNS if name not in _KEY)
        statement = self._sql(
            f"insert into {self._table} ({names}) values ({places}) "
            f"on conflict ({', '.join(_KEY)}) do update set {updates}"
        )
        for label in labels:
            run(statement, [getattr(label, name) for name in _COLUMNS])

    def labels(self) -> list[HumanLabel]:
        """Every label of the benchmark, oldest first."""
        with self._cursor() as run:
            if not self._exists(run, TABLE):
                return []
            rows = run(f"select {', '.join(_COLUMNS)} from {self._table} order by labelled_at", [])
        return [HumanLabel(**_utc(dict(zip(_COLUMNS, row, strict=True)))) for row in rows]

    def _exists(self, run: Statement, table: str) -> bool:
        return bool(self._columns(run, table))

    def _columns(self, run: Statement, table: str) -> set[str]:
        found = run(
            self._sql(
                "select column_name from information_schema.columns "
                "where table_schema = ? and table_name = ?"
            ),
            [self.schema, table],
        )
        return {str(name) for (name,) in found}

    def judged(self) -> list[JudgedLabel]:
        """Every label whose run and metric have a stored score, with that score."""
        with self._cursor() as run:
            return judged_labels(
                self.benchmark,
                lambda table: self._columns(run, table),
                lambda statement: run(statement, []),
            )

    def scored(self, run_ids: Iterable[str]) -> dict[tuple[str, str], str]:
        """The (run, metric) pairs among these runs with a stored score → the run's hash."""
        wanted = sorted(set(run_ids))
        pairs: dict[tuple[str, str], str] = {}
        if not wanted:
            return pairs
        sources = (
            ("metric_scores", "run_id", "metric"),
            ("online_scores", "score_id", "metric"),
            ("red_team_results", ATTACK_RUN.format(t=""), ATTACK_METRIC.format(t="")),
        )
        with self._cursor() as run:
            for table, column, metric in sources:
                if not self._exists(run, table):
                    continue
                for start in range(0, len(wanted), 500):
                    chunk = wanted[start : start + 500]
                    places = ", ".join("?" for _ in chunk)
                    found = run(
                        self._sql(
                            f"select distinct {column}, {metric}, workflow_hash from "
                            f"{quoted(self.schema)}.{table} where {column} in ({places})"
                        ),
                        chunk,
                    )
                    pairs.update({(str(r), str(m)): str(h) for r, m, h in found})
        return pairs


def _utc(values: dict[str, Any]) -> dict[str, Any]:
    when = values["labelled_at"]
    if isinstance(when, datetime):
        values["labelled_at"] = when.astimezone(UTC)
    return values


class DuckDbLabelStore(SqlLabelStore):
    """Labels in the results' DuckDB file."""

    def __init__(self, benchmark: Benchmark, database: Path) -> None:
        super().__init__(benchmark)
        self.database = database

    @contextmanager
    def _cursor(self) -> Iterator[Statement]:
        new = not self.database.exists()
        settings.private_dir(self.database.parent)
        connection = connect_waiting_for_locks(str(self.database), DUCKDB_CONFIG)
        if new:
            self.database.chmod(PRIVATE_FILE_MODE)
        try:
            connection.execute("begin transaction")

            def run(statement: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
                result = connection.execute(statement, list(values))
                return list(result.fetchall()) if result.description else []

            yield run
            connection.execute("commit")
        except BaseException:
            connection.execute("rollback")
            raise
        finally:
            connection.close()


class PostgresLabelStore(SqlLabelStore):
    """Labels in the results' PostgreSQL (the distributed profiles)."""

    marker = "%s"

    def __init__(self, benchmark: Benchmark, url: str) -> None:
        super().__init__(benchmark)
        self.url = url

    @contextmanager
    def _cursor(self) -> Iterator[Statement]:
        with (
            transaction(self.url, "n8n-deepeval-labels") as connection,
            connection.cursor() as cursor,
        ):
            # Two writers creating the schema or table at once: one waits for the other.
            cursor.execute(
                "select pg_advisory_xact_lock(hashtext(%s))",
                [f"n8n_deepeval:{self.schema}.{TABLE}"],
            )

            def run(statement: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
                cursor.execute(statement, list(values))
                return list(cursor.fetchall()) if cursor.description else []

            yield run


class HumanLabelsResource(dg.ConfigurableResource):
    """Where people's labels are kept: the results' DuckDB file, or their PostgreSQL."""

    database: str | None = Field(default=None, description="The DuckDB file (local profile).")
    url: str | None = Field(
        default=None, description="The results' PostgreSQL URL (distributed profiles)."
    )

    def store(self, benchmark: Benchmark) -> LabelStore:
        """The label store of one benchmark."""
        return label_store(benchmark, self.database, self.url)


def label_store(benchmark: Benchmark, database: str | None, url: str | None) -> LabelStore:
    """PostgreSQL when a URL is given, else the DuckDB file."""
    if url:
        return PostgresLabelStore(benchmark, url)
    if database is None:
        raise ValueError("the label store needs a DuckDB file or a PostgreSQL URL")
    return DuckDbLabelStore(benchmark, Path(database))
