"""Progress of a long step: in Dagster's log, and on the terminal of a quiet CLI run.

`run` hides Dagster's log unless asked (`--verbose`), yet a long run should still say how
far it got: a step says its progress through ``say_progress``, which the CLI shows on
stderr while Dagster's own lines stay hidden.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO, cast

import dagster as dg

PROGRESS = logging.getLogger("n8n_deepeval_pipeline.progress")


def say_progress(context: dg.OpExecutionContext | dg.AssetExecutionContext, message: str) -> None:
    """Log ``message`` to the run's Dagster log and to whoever follows the progress."""
    context.log.info(message)
    PROGRESS.info(message)


# What Dagster writes to stderr itself (not through a logger) when its event log cannot
# take a log line: on a full disk, SQLite's error and a link, before the run's own line.
_EVENT_LOG_COMPLAINT = "Exception while writing logger call to event log"


class _WithoutDagsterComplaints(io.TextIOBase):
    """stderr less Dagster's own complaints: the run's errors say them, in one line."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if text.startswith(_EVENT_LOG_COMPLAINT):
            return len(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()


@contextmanager
def progress_on_stderr(prefix: str = "") -> Iterator[None]:
    """Show the steps' progress lines on stderr, bare (after ``prefix``), while the block runs.

    Dagster's log is hidden meanwhile, and so is what Dagster writes to stderr itself.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(prefix.replace("%", "%%") + "%(message)s"))
    level = PROGRESS.level
    PROGRESS.addHandler(handler)
    PROGRESS.setLevel(logging.INFO)
    stderr = sys.stderr
    sys.stderr = cast(TextIO, _WithoutDagsterComplaints(stderr))
    try:
        yield
    finally:
        sys.stderr = stderr
        PROGRESS.removeHandler(handler)
        PROGRESS.setLevel(level)
