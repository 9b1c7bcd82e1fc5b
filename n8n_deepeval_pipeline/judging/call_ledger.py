"""Every judge call as it is answered, appended where the scoring step can read it back.

A run's score rows carry the calls behind the evaluations it finished. One killed (kill
-9) leaves calls the judge answered, and was paid for, in no row: the answers wait in the
cache, and the resumed run reads them as free. So each answered call is also written
here the moment it arrives, one line in a file of its worker's own, tagged with the
attempt (the Dagster run) that asked: the spend of every attempt, counted durably. A
line is one ``write`` to a file opened for appending: a killed process leaves every line
it wrote (a machine crash may lose the last few, not the rest).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError


class LedgerTag(BaseModel):
    """Where a task's answered calls are written, and the attempt they are charged to."""

    model_config = ConfigDict(frozen=True)

    folder: str
    attempt: str


class AnsweredCall(BaseModel):
    """One call the judge answered: its attempt, its judge and model, its tokens."""

    attempt: str
    judge: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class CallLedger:
    """The calls one worker process writes for one ledger tag."""

    def __init__(self, tag: LedgerTag) -> None:
        self.tag = tag
        self._path = Path(tag.folder) / f"{os.getpid()}.jsonl"

    def answered(self, judge: str, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Write one answered call, at once."""
        call = AnsweredCall(
            attempt=self.tag.attempt,
            judge=judge,
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
        line = (call.model_dump_json() + "\n").encode("utf-8")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)


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
