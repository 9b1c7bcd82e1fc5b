"""Versions that call the workflow side by side start their calls together.

Each version of a family run (``family_run``) gets ready on its own: its process starts,
reads its tables, publishes its harness copy. Those take seconds and differ, so without a
meeting point the versions' calls would follow one another instead of overlapping. Each
version marks itself ready in a folder the runs share (run tag ``calls_start_together``)
and waits until every version has, or has ended without getting there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

CALLS_START_TOGETHER = "n8n_deepeval/calls_start_together"
"""Run tag: the folder where the versions of a family run mark themselves ready."""
WAIT_S = 600.0
"""The longest a version waits for the others (one may have crashed without a mark)."""
_POLL_S = 0.05


def arrive(folder: Path, version: str) -> None:
    """Mark ``version`` as ready, or as ended before it got there (the same to the others)."""
    (folder / version).touch()


def start_together(
    tags: Mapping[str, str],
    version: str,
    expected: int,
    say: Callable[[str], None],
    wait_s: float = WAIT_S,
) -> None:
    """Mark this version ready and wait for the ``expected`` versions (none without the tag)."""
    given = tags.get(CALLS_START_TOGETHER)
    if given is None:
        return
    folder = Path(given)
    arrive(folder, version)
    started = time.monotonic()
    while len(list(folder.iterdir())) < expected:
        if time.monotonic() - started > wait_s:
            say(f"calling without the other versions: they were not ready after {wait_s:.0f} s")
            return
        time.sleep(_POLL_S)
    say(f"calling beside {expected - 1} other version(s) after {time.monotonic() - started:.1f} s")
