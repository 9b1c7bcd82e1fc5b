"""A limit on judge calls in flight, shared by every worker process.

N slot files in a shared folder; a call holds an exclusive ``flock`` on one of them.
The kernel releases a lock when its process dies, so a crashed worker never leaks a
slot. How many of the N may be held at once can change from call to call (``allowed``:
the concurrency the judge's pacing has fitted so far).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from n8n_deepeval_pipeline.settings import private_dir

_POLL_S = 0.01
_RECHECK_S = 0.1


class InFlightLimit:
    """Up to ``slots`` concurrent holders across all processes using ``folder``.

    Within a process, callers beyond the allowed count wait on a condition rather than
    polling the files (a worker has many evaluations in flight, all on one event loop).
    """

    def __init__(self, folder: Path, slots: int) -> None:
        private_dir(folder)  # it may create the judge state folder: private, like all of it
        self.paths = [folder / f"slot-{index}" for index in range(slots)]
        for path in self.paths:
            path.touch(exist_ok=True)
        self._holders = 0  # callers of this process holding or taking a slot
        self._turn: asyncio.Condition | None = None

    def _try_take(self, allowed: int) -> int | None:
        for path in self.paths[: max(allowed, 1)]:
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None

    @contextlib.asynccontextmanager
    async def slot(self, allowed: Callable[[], int] | None = None) -> AsyncIterator[None]:
        """Hold one of the first ``allowed()`` slots (all of them: None) during a call."""

        def limit() -> int:
            return max(allowed() if allowed else len(self.paths), 1)

        turn = self._turn = self._turn or asyncio.Condition()
        async with turn:
            while self._holders >= limit():
                # Woken by a release here, or look again shortly: the allowed count also
                # grows with answers in other processes.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(turn.wait(), timeout=_RECHECK_S)
            self._holders += 1
        try:
            fd = self._try_take(limit())
            while fd is None:
                await asyncio.sleep(_POLL_S)
                fd = self._try_take(limit())
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        finally:
            async with turn:
                self._holders -= 1
                turn.notify_all()  # the allowed count may have grown: every waiter looks
