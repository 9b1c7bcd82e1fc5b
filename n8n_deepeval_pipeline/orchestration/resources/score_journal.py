"""A journal of finished evaluations, so a failed scoring step loses nothing.

Every result is appended (and flushed) as it arrives. When a partition's scoring is
interrupted (an error, a cancelled run, a killed process), the next materialisation
reuses the journal's results for the same tasks and evaluates only the rest; a
scoring step that completes removes its journal. Everything that is not a judgement
(judge outage or error, worker crash, timeout) is evaluated again.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
from pydantic import ValidationError

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask, is_unjudged


class ScoreJournal:
    """The journal of one benchmark partition."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def completed(self) -> dict[str, EvaluationResult]:
        """Results worth keeping, by task fingerprint (a torn last line is ignored)."""
        if not self.path.exists():
            return {}
        results: dict[str, EvaluationResult] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                result = EvaluationResult.model_validate(entry["result"])
            except (json.JSONDecodeError, KeyError, TypeError, ValidationError):
                continue
            if not is_unjudged(result.error_kind):
                results[entry["fingerprint"]] = result
        return results

    def record(self, task: EvaluationTask, result: EvaluationResult) -> None:
        """Append one finished evaluation."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"fingerprint": task.fingerprint(), "result": result.model_dump()})
        with self.path.open("a", encoding="utf-8") as journal:
            journal.write(line + "\n")
            journal.flush()

    def clear(self) -> None:
        """Forget the partition's results (its scoring step completed)."""
        self.path.unlink(missing_ok=True)


class ScoreJournalResource(dg.ConfigurableResource):
    """Where scoring journals live (one file per benchmark partition)."""

    directory: str

    def journal(self, benchmark: str, partition: str) -> ScoreJournal:
        """The journal of one benchmark partition."""
        return ScoreJournal(Path(self.directory) / benchmark / f"{partition}.jsonl")
