"""Progress of a long step: in Dagster's log, and on the terminal of a quiet CLI run.

`run` hides Dagster's log unless asked (`--verbose`), yet a long run should still say how
far it got: a step says its progress through ``say_progress``, which the CLI shows on
stderr while Dagster's own lines stay hidden.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

PROGRESS = logging.getLogger("n8n_deepeval_pipeline.progress")


def say_progress(context: dg.OpExecutionContext | dg.AssetExecutionContext, message: str) -> None:
    """Log ``message`` to the run's Dagster log and to whoever follows the progress."""
    context.log.info(message)
    PROGRESS.info(message)


@contextmanager
def progress_on_stderr(prefix: str = "") -> Iterator[None]:
    """Show the steps' progress lines on stderr, bare (after ``prefix``), while the block runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(prefix.replace("%", "%%") + "%(message)s"))
    level = PROGRESS.level
    PROGRESS.addHandler(handler)
    PROGRESS.setLevel(logging.INFO)
    try:
        yield
    finally:
        PROGRESS.removeHandler(handler)
        PROGRESS.setLevel(level)
