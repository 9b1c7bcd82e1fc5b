"""Every judge call as it is answered, appended where the scoring step can read it back.

A run's score rows carry the calls behind the evaluations it finished. One killed (kill
-9) leaves calls the judge answered, and was paid for, in no row: the answers wait in the
cache, and the resumed run reads them as free. So each answered call is also written
here the moment it arrives, tagged with the attempt (the Dagster run) that asked: the
spend of every attempt, counted durably. Where it is written follows the score journal:

- on one machine, one line in a file of its worker's own and its attempt's, one ``write``
  to a file opened for appending: a killed process leaves every line it wrote (a machine
  crash may lose the last few, not the rest);
- on a fleet (the PostgreSQL profiles), one row in the journal's database, committed at
  once: a step re-delivered to another machine after its own was lost reads the calls
  the lost machine was answered, so they are charged to the attempt that made them.

The calls are forgotten once the version's scores that charge them are stored, except
those of an attempt still running beside it (a run of the same version at the same
time): they are its own to charge when it stores its scores.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

LEDGER_SCHEMA = "n8n_deepeval_journal"
"""The PostgreSQL schema of the fleet's score journal and call ledger."""
LEDGER_TABLE = "answered_calls"
"""The call ledger's table in it: one row per answered call."""


class LedgerDatabase(BaseModel):
    """The fleet's ledger: a PostgreSQL database, and the chunk whose calls these are."""

    model_config = ConfigDict(frozen=True)

    url: SecretStr  # libpq's URL; it travels to the worker with the task, as a judge key does
    benchmark: str
    partition: str
    chunk: str


class LedgerTag(BaseModel):
    """Where a task's answered calls are written, and the attempt they are charged to.

    ``folder``: this machine's files; ``database``: the fleet's PostgreSQL (one of them).
    """

    model_config = ConfigDict(frozen=True)

    attempt: str
    folder: str | None = None
    database: LedgerDatabase | None = None


class AnsweredCall(BaseModel):
    """One call the judge answered: its attempt, its judge and model, its tokens."""

    attempt: str
    judge: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


# A worker's connection to the fleet's ledger, opened at its first answered call and kept.
_CONNECTIONS: dict[str, Any] = {}


def _connection(url: str) -> Any:
    found = _CONNECTIONS.get(url)
    if found is None or found.closed:
        import psycopg2  # the distributed extra; only a fleet's workers get here

        found = psycopg2.connect(url, application_name="n8n-deepeval-ledger")
        found.autocommit = True  # each call is its own transaction: kept once answered
        _CONNECTIONS[url] = found
    return found


class CallLedger:
    """The calls one worker process writes for one ledger tag."""

    def __init__(self, tag: LedgerTag) -> None:
        self.tag = tag

    def answered(self, judge: str, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Write one answered call, at once."""
        call = AnsweredCall(
            attempt=self.tag.attempt,
            judge=judge,
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
        if self.tag.database is not None:
            self._insert(self.tag.database, call)
        if self.tag.folder is not None:
            self._append(Path(self.tag.folder), call)

    @staticmethod
    def _append(folder: Path, call: AnsweredCall) -> None:
        line = (call.model_dump_json() + "\n").encode("utf-8")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{call.attempt}.{os.getpid()}.jsonl"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)

    @staticmethod
    def _insert(database: LedgerDatabase, call: AnsweredCall) -> None:
        with _connection(database.url.get_secret_value()).cursor() as cursor:
            cursor.execute(
                f"insert into {LEDGER_SCHEMA}.{LEDGER_TABLE} (benchmark, partition_key, chunk, "
                "attempt, judge, model, prompt_tokens, completion_tokens) "
                "values (%s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    database.benchmark,
                    database.partition,
                    database.chunk,
                    call.attempt,
                    call.judge,
                    call.model,
                    call.prompt_tokens,
                    call.completion_tokens,
                ],
            )


def answered_calls(folder: Path) -> Iterator[AnsweredCall]:
    """Every call written under ``folder``, in no particular order (torn lines skipped)."""
    for path in sorted(folder.glob("*.jsonl")):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:  # cleared meanwhile by the attempt that finished
            continue
        for line in text.splitlines():
            try:
                yield AnsweredCall.model_validate(json.loads(line))
            except (ValueError, ValidationError):
                continue


def forget_calls(folder: Path, running: Container[str]) -> None:
    """Remove the ledger's files, but those holding a call of a ``running`` attempt."""
    for path in sorted(folder.glob("*.jsonl")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            continue
        attempts = {_attempt_of(line) for line in lines}
        if not any(attempt in running for attempt in attempts if attempt is not None):
            path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # gone already, or a running attempt's calls are left
        folder.rmdir()


def _attempt_of(line: str) -> str | None:
    try:
        return AnsweredCall.model_validate(json.loads(line)).attempt
    except (ValueError, ValidationError):
        return None
