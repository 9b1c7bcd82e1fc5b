"""The score journal and call ledger a fleet shares, in the results' PostgreSQL.

Under the ``distributed`` and ``kubernetes`` profiles a step may run on any machine, and a
step whose machine is lost whole is re-delivered to another (Celery's visibility timeout,
a Kubernetes job's retry). The journal in files would stay on the lost machine, and every
judge call it made would be paid for again; here it is one row per finished evaluation in
``n8n_deepeval_journal.scores``, committed as the result arrives, so the machine that gets
the step resumes from what the lost one finished. The workers write each answered judge
call into ``n8n_deepeval_journal.answered_calls`` the same way (``judging.call_ledger``),
so the calls the lost machine was answered are charged to the attempt that made them.

The tables are created on first use (under an advisory lock: several machines may start
at once). The URL is the one the results use (``postgresql+psycopg2://…``); psycopg2 comes
with the ``distributed`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from typing import Any, Self

from pydantic import SecretStr, ValidationError

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.judging.call_ledger import (
    LEDGER_SCHEMA,
    LEDGER_TABLE,
    AnsweredCall,
    LedgerDatabase,
    LedgerTag,
)
from n8n_deepeval_pipeline.orchestration.resources.score_journal import (
    JournalEntry,
    kept_results,
)
from n8n_deepeval_pipeline.tables.postgres_connection import libpq_url, psycopg2_connection

SCORES_TABLE = "scores"
"""The journal's table: one row per finished evaluation of a chunk."""
_TABLES = f"""
create schema if not exists {LEDGER_SCHEMA};
create table if not exists {LEDGER_SCHEMA}.{SCORES_TABLE} (
    id bigserial primary key,
    benchmark text not null,
    partition_key text not null,
    chunk text not null,
    fingerprint text not null,
    run_id text not null,
    result jsonb not null,
    recorded_at timestamptz not null default now()
);
create index if not exists scores_of_partition
    on {LEDGER_SCHEMA}.{SCORES_TABLE} (benchmark, partition_key);
create table if not exists {LEDGER_SCHEMA}.{LEDGER_TABLE} (
    id bigserial primary key,
    benchmark text not null,
    partition_key text not null,
    chunk text not null,
    attempt text not null,
    judge text not null,
    model text not null,
    prompt_tokens integer not null,
    completion_tokens integer not null,
    answered_at timestamptz not null default now()
);
create index if not exists calls_of_partition
    on {LEDGER_SCHEMA}.{LEDGER_TABLE} (benchmark, partition_key);
"""
_CREATED: set[str] = set()  # databases whose tables this process has made sure of


def connect(url: str) -> Any:
    """An autocommit connection to the journal's database, its tables made sure of."""
    connection = psycopg2_connection(url, "n8n-deepeval-journal")
    connection.autocommit = True  # each result is kept once it is recorded
    if url not in _CREATED:
        with connection.cursor() as cursor:
            cursor.execute("begin")
            cursor.execute("select pg_advisory_xact_lock(hashtext(%s))", [LEDGER_SCHEMA])
            cursor.execute(_TABLES)
            cursor.execute("commit")
        _CREATED.add(url)
    return connection


def _result(value: Any) -> EvaluationResult | None:
    try:
        return EvaluationResult.model_validate(
            value if isinstance(value, dict) else json.loads(value)
        )
    except (ValueError, ValidationError):
        return None


class PostgresScoreJournal:
    """The journal of one chunk, in the fleet's PostgreSQL; one connection while in ``with``."""

    def __init__(self, url: str, benchmark: str, partition: str, chunk: str) -> None:
        self.url = url
        self.benchmark, self.partition, self.chunk = benchmark, partition, chunk
        self._connection: Any = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _cursor(self) -> Any:
        if self._connection is None or self._connection.closed:
            self._connection = connect(self.url)
        return self._connection.cursor()

    def _entries(self, whole_partition: bool) -> Iterator[JournalEntry]:
        where, values = _where(
            self.benchmark, self.partition, None if whole_partition else self.chunk
        )
        with self._cursor() as cursor:
            cursor.execute(
                f"select run_id, fingerprint, result from {LEDGER_SCHEMA}.{SCORES_TABLE} "
                f"{where} order by id",
                values,
            )
            rows = cursor.fetchall()
        for run_id, fingerprint, value in rows:
            result = _result(value)
            if result is not None:
                yield str(run_id), str(fingerprint), result

    def completed(self) -> dict[str, EvaluationResult]:
        """Results worth keeping, by task fingerprint: every chunk's of the partition."""
        return kept_results(self._entries(whole_partition=True))

    def record(self, task: EvaluationTask, result: EvaluationResult, run_id: str = "") -> None:
        """Insert one finished evaluation, committed at once."""
        with self._cursor() as cursor:
            cursor.execute(
                f"insert into {LEDGER_SCHEMA}.{SCORES_TABLE} "
                "(benchmark, partition_key, chunk, fingerprint, run_id, result) "
                "values (%s, %s, %s, %s, %s, %s)",
                [
                    self.benchmark,
                    self.partition,
                    self.chunk,
                    task.fingerprint(),
                    run_id,
                    result.model_dump_json(),
                ],
            )

    def attempts(self) -> list[JournalEntry]:
        """Every evaluation this chunk journaled, kept or not."""
        return list(self._entries(whole_partition=False))

    def ledger_tag(self, attempt: str) -> LedgerTag:
        """The chunk's rows of the fleet's ledger, charged to ``attempt``."""
        database = LedgerDatabase(
            url=SecretStr(libpq_url(self.url)),
            benchmark=self.benchmark,
            partition=self.partition,
            chunk=self.chunk,
        )
        self._cursor().close()  # the tables exist before a worker writes a call
        return LedgerTag(attempt=attempt, database=database)

    def answered_calls(self) -> Iterator[AnsweredCall]:
        """Every call this chunk's attempts were answered, whichever machine asked."""
        where, values = _where(self.benchmark, self.partition, self.chunk)
        with self._cursor() as cursor:
            cursor.execute(
                "select attempt, judge, model, prompt_tokens, completion_tokens "
                f"from {LEDGER_SCHEMA}.{LEDGER_TABLE} {where} order by id",
                values,
            )
            rows = cursor.fetchall()
        for attempt, judge, model, prompt_tokens, completion_tokens in rows:
            yield AnsweredCall(
                attempt=attempt,
                judge=judge,
                model=model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )


def _where(benchmark: str, partition: str, chunk: str | None) -> tuple[str, list[str]]:
    """The rows of a partition, or of one chunk of it: the clause and its values."""
    if chunk is None:
        return "where benchmark = %s and partition_key = %s", [benchmark, partition]
    return "where benchmark = %s and partition_key = %s and chunk = %s", [
        benchmark,
        partition,
        chunk,
    ]


def clear_postgres_partition(
    url: str, benchmark: str, partition: str, running: Collection[str] = ()
) -> None:
    """Delete a partition's results and answered calls: its table is stored.

    The calls of the ``running`` attempts (runs of it still going) stay theirs.
    """
    where, values = _where(benchmark, partition, None)
    connection = connect(url)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"delete from {LEDGER_SCHEMA}.{SCORES_TABLE} {where}", values)
            cursor.execute(
                f"delete from {LEDGER_SCHEMA}.{LEDGER_TABLE} {where} and attempt <> all(%s)",
                [*values, list(running)],
            )
    finally:
        connection.close()
