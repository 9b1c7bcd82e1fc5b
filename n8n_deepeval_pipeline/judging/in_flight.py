"""A limit on judge calls in flight, shared by every worker process.

N slot files in a shared folder; a call holds an exclusive ``flock`` on one of them.
The kernel releases a lock when its process dies, so a crashed worker never leaks a
slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

from n8n_deepeval_pipeline.settings import private_dir

_POLL_S = 0.005


class InFlightLimit:
    """Up to ``slots`` concurrent holders across all processes using ``folder``."""

    def __init__(self, folder: Path, slots: int) -> None:
        private_dir(folder)  # it may create the judge state folder: private, like all of it
        self.paths = [folder / f"slot-{index}" for index in range(slots)]
        for path in self.paths:
            path.touch(exist_ok=True)

    def _try_take(self) -> int | None:
        for path in self.paths:
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the duration of a call."""
        fd = self._try_take()
        while fd is None:
            await asyncio.sleep(_POLL_S)
            fd = self._try_take()
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
