"""A journal of finished evaluations, so a failed scoring step loses nothing.

Every result is appended (and flushed) as it arrives. When a partition's scoring is
interrupted (an error, a cancelled run, a killed process), the next materialisation
reuses the journal's results for the same tasks and evaluates only the rest; a
scoring step that completes removes its journal. Everything that is not a judgement
(judge outage or error, worker crash, timeout) is evaluated again.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
from pydantic import ValidationError

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask, is_unjudged


class ScoreJournal:
    """The journal of one benchmark partition, or of one chunk of it.

    A chunk writes only its own file; it reads back every journal of its partition
    (``shared``), so a chunk re-executed with other bounds (another chunk size) still
    finds the evaluations an earlier attempt finished. Results are keyed by task
    fingerprint, so reading a sibling's file cannot mix up tasks.
    """

    def __init__(self, path: Path, shared: Path | None = None) -> None:
        self.path = path
        self.shared = shared
        """The folder of the partition's chunk journals, also read on resume."""

    def _files(self) -> list[Path]:
        siblings = sorted(self.shared.glob("*.jsonl")) if self.shared is not None else []
        return [self.path, *(path for path in siblings if path != self.path)]

    def completed(self) -> dict[str, EvaluationResult]:
        """Results worth keeping, by task fingerprint (a torn last line is ignored)."""
        results: dict[str, EvaluationResult] = {}
        for path in self._files():
            for _, fingerprint, result in _entries(path):
                if not is_unjudged(result.error_kind):
                    results.setdefault(fingerprint, result)
        return results

    def record(self, task: EvaluationTask, result: EvaluationResult, run_id: str = "") -> None:
        """Append one finished evaluation, made by Dagster run ``run_id``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"fingerprint": task.fingerprint(), "result": result.model_dump(), "run": run_id}
        line = json.dumps(entry)
        with self.path.open("a", encoding="utf-8") as journal:
            journal.write(line + "\n")
            journal.flush()

    def attempts(self) -> list[tuple[str, str, EvaluationResult]]:
        """Every evaluation this chunk's journal holds, kept or not: (run id, fingerprint, result).

        Only this chunk's own file: a sibling's evaluations are counted by the sibling.
        """
        return list(_entries(self.path))

    @property
    def ledger(self) -> Path:
        """The folder of this chunk's call ledger: every judge call answered, by attempt."""
        return self.path.with_suffix(".calls")

    def clear(self) -> None:
        """Forget this journal's results and answered calls (its rows are stored)."""
        self.path.unlink(missing_ok=True)
        shutil.rmtree(self.ledger, ignore_errors=True)


class ScoreJournalResource(dg.ConfigurableResource):
    """Where scoring journals live: ``<benchmark>/<partition>/<chunk>.jsonl``.

    The folder is this machine's (``$N8N_DEEPEVAL_HOME/journal``): a chunk re-executed on
    another machine starts again (through that machine's judge cache).
    """

    directory: str

    def journal(self, benchmark: str, partition: str, chunk: str = "c01_of_01") -> ScoreJournal:
        """The journal of one chunk of a benchmark partition."""
        folder = Path(self.directory) / benchmark / partition
        return ScoreJournal(folder / f"{chunk}.jsonl", shared=folder)

    def clear_partition(self, benchmark: str, partition: str) -> None:
        """Forget every chunk journal of a partition (its table is stored)."""
        folder = Path(self.directory) / benchmark / partition
        for path in folder.glob("*.jsonl"):
            path.unlink(missing_ok=True)
        for ledger in folder.glob("*.calls"):
            shutil.rmtree(ledger, ignore_errors=True)
        with contextlib.suppress(OSError):  # not empty: a chunk is writing again
            folder.rmdir()


def _entries(path: Path) -> Iterator[tuple[str, str, EvaluationResult]]:
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
