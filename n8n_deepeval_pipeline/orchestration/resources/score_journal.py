"""A journal of finished evaluations, so a failed scoring step loses nothing.

Every result is appended as it arrives. When a partition's scoring is interrupted (an
error, a cancelled run, a killed process, a lost machine), the next attempt reuses the
journal's results for the same tasks and evaluates only the rest; the journal is removed
when the partition's table is stored, not when one of its chunks is (a run killed after
a chunk finished resumes it whole, and charges what it cost). Everything that is not a
judgement (judge outage or error, worker crash, timeout) is evaluated again. Beside it,
the call ledger keeps every judge call as it is answered (``judging.call_ledger``), the
scoring chunks' and the simulated users' (``SIMULATION_LEDGER``).

Where it lives follows the profile: files under ``$N8N_DEEPEVAL_HOME/journal`` on one
machine (``local``); the results' PostgreSQL on a fleet (``distributed``, ``kubernetes``),
where a step re-delivered to another machine after its own was lost must find what the
lost one journaled (``postgres_score_journal``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

import dagster as dg
from pydantic import Field, ValidationError

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask, is_unjudged
from n8n_deepeval_pipeline.judging.call_ledger import (
    AnsweredCall,
    LedgerTag,
    answered_calls,
    forget_calls,
)

JournalEntry = tuple[str, str, EvaluationResult]
"""(Dagster run id, task fingerprint, result) of one journaled evaluation."""
SIMULATION_LEDGER = "simulation"
"""The journal (by chunk name) whose ledger holds the simulated users' answered calls."""


class ScoreJournal(Protocol):
    """The journal of one chunk of a benchmark partition, wherever it lives.

    A chunk writes only its own entries; it reads back every entry of its partition, so a
    chunk re-executed with other bounds (another chunk size) still finds the evaluations
    an earlier attempt finished. Results are keyed by task fingerprint, so reading a
    sibling's cannot mix up tasks.
    """

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def completed(self) -> dict[str, EvaluationResult]:
        """Results worth keeping, by task fingerprint (the partition's, every chunk's)."""
        ...

    def record(self, task: EvaluationTask, result: EvaluationResult, run_id: str = "") -> None:
        """Keep one finished evaluation, made by Dagster run ``run_id``, at once."""
        ...

    def attempts(self) -> list[JournalEntry]:
        """Every evaluation this chunk journaled, kept or not (a sibling counts its own)."""
        ...

    def ledger_tag(self, attempt: str) -> LedgerTag:
        """Where this chunk's workers write each answered call, charged to ``attempt``."""
        ...

    def answered_calls(self) -> Iterator[AnsweredCall]:
        """Every judge call this chunk's attempts were answered."""
        ...


def kept_results(entries: Iterator[JournalEntry]) -> dict[str, EvaluationResult]:
    """The first judged result of each fingerprint among ``entries``."""
    results: dict[str, EvaluationResult] = {}
    for _, fingerprint, result in entries:
        if not is_unjudged(result.error_kind):
            results.setdefault(fingerprint, result)
    return results


class FileScoreJournal:
    """The journal of one chunk as a file of this machine (appended and flushed per result)."""

    def __init__(self, path: Path, shared: Path | None = None) -> None:
        self.path = path
        self.shared = shared
        """The folder of the partition's chunk journals, also read on resume."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def _files(self) -> list[Path]:
        siblings = sorted(self.shared.glob("*.jsonl")) if self.shared is not None else []
        return [self.path, *(path for path in siblings if path != self.path)]

    def completed(self) -> dict[str, EvaluationResult]:
        """Results worth keeping, by task fingerprint (a torn last line is ignored)."""
        return kept_results(entry for path in self._files() for entry in _entries(path))

    def record(self, task: EvaluationTask, result: EvaluationResult, run_id: str = "") -> None:
        """Append one finished evaluation, made by Dagster run ``run_id``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"fingerprint": task.fingerprint(), "result": result.model_dump(), "run": run_id}
        line = json.dumps(entry)
        with self.path.open("a", encoding="utf-8") as journal:
            journal.write(line + "\n")
            journal.flush()

    def attempts(self) -> list[JournalEntry]:
        """Every evaluation this chunk's file holds, kept or not."""
        return list(_entries(self.path))

    @property
    def ledger(self) -> Path:
        """The folder of this chunk's call ledger: every judge call answered, by attempt."""
        return self.path.with_suffix(".calls")

    def ledger_tag(self, attempt: str) -> LedgerTag:
        """The chunk's ledger folder, charged to ``attempt``."""
        return LedgerTag(folder=str(self.ledger), attempt=attempt)

    def answered_calls(self) -> Iterator[AnsweredCall]:
        """Every call in the chunk's ledger folder."""
        return answered_calls(self.ledger)


class ScoreJournalResource(dg.ConfigurableResource):
    """Where scoring journals live.

    Without ``url``: this machine's ``<directory>/<benchmark>/<partition>/<chunk>.jsonl``
    (a chunk re-executed on another machine starts again). With it: the fleet's
    PostgreSQL, which every machine reads.
    """

    directory: str
    url: str | None = Field(
        default=None,
        description="The results' PostgreSQL (postgresql+psycopg2://…), under the distributed "
        "profiles: the journal every machine of the fleet reads.",
    )

    def journal(self, benchmark: str, partition: str, chunk: str = "c01_of_01") -> ScoreJournal:
        """The journal of one chunk of a benchmark partition."""
        if self.url is not None:
            # Imported here: that module builds on this one's journal protocol.
            from n8n_deepeval_pipeline.orchestration.resources.postgres_score_journal import (
                PostgresScoreJournal,
            )

            return PostgresScoreJournal(self.url, benchmark, partition, chunk)
        folder = Path(self.directory) / benchmark / partition
        return FileScoreJournal(folder / f"{chunk}.jsonl", shared=folder)

    def clear_partition(
        self, benchmark: str, partition: str, running: Collection[str] = ()
    ) -> None:
        """Forget a partition's journals and answered calls: its table is stored.

        The calls of the ``running`` attempts (runs of it still going) stay theirs.
        """
        if self.url is not None:
            from n8n_deepeval_pipeline.orchestration.resources.postgres_score_journal import (
                clear_postgres_partition,
            )

            clear_postgres_partition(self.url, benchmark, partition, running)
            return
        folder = Path(self.directory) / benchmark / partition
        for path in folder.glob("*.jsonl"):
            path.unlink(missing_ok=True)
        for ledger in folder.glob("*.calls"):
            forget_calls(ledger, set(running))
        with contextlib.suppress(OSError):  # not empty: a chunk is writing again
            folder.rmdir()


def _entries(path: Path) -> Iterator[JournalEntry]:
    """The journal file's readable entries: (run id, fingerprint, result); torn lines skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:  # none yet, or a sibling cleared meanwhile
        return
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            result = EvaluationResult.model_validate(entry["result"])
            fingerprint = str(entry["fingerprint"])
        except (json.JSONDecodeError, KeyError, TypeError, ValidationError):
            continue
        yield str(entry.get("run", "")), fingerprint, result
