"""A limit on judge calls in flight, shared by every worker process.

N slot files in a shared folder; a call holds an exclusive ``flock`` on one of them.
The kernel releases a lock when its process dies, so a crashed worker never leaks a
slot. How many of the N may be held at once can change from call to call (``allowed``:
the concurrency the judge's pacing has fitted so far).

A call looks for a free slot from a random one on, skipping the slots its own process
holds: from slot 0 on, with many calls in flight, each call tried every held slot (an
open, a refused lock and a close each) before it found a free one.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

from n8n_deepeval_pipeline.settings import private_dir

_POLL_S = 0.01  # the first look again for a slot other processes hold, doubling up to
_POLL_MAX_S = 0.16  # this: each look costs a few system calls per slot it tries
_RECHECK_S = 0.1
# Its own generator: draws from the process's ``random`` on the judge's thread would move a
# seeded sequence another thread draws from (a synthesis's choice of evolutions).
_SPREAD = random.Random()


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
        self._names = [os.fspath(path) for path in self.paths]
        self._held: set[int] = set()  # slots this process holds
        self._holders = 0  # callers of this process holding or taking a slot
        self._waiting = 0  # callers of this process that found no slot free at once
        self._turn: asyncio.Condition | None = None
        self._looking: asyncio.Lock | None = None  # one caller of the process polls the files

    @property
    def waiting(self) -> int:
        """Callers of this process waiting for a slot: the allowed ones are all held."""
        return self._waiting

    def _try_take(self, allowed: int) -> tuple[int, int] | None:
        """A free slot among the first ``allowed`` (its index and locked descriptor)."""
        allowed = min(max(allowed, 1), len(self._names))
        start = _SPREAD.randrange(allowed)
        for offset in range(allowed):
            index = (start + offset) % allowed
            if index in self._held:
                continue
            fd = os.open(self._names[index], os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._held.add(index)
            return index, fd
        return None

    async def _wait_for_others(self, limit: Callable[[], int]) -> tuple[int, int]:
        """A slot, once other processes free one: looked for by one caller at a time.

        Each look tries every allowed slot; with every caller looking, 240 calls waiting
        at a 2 s judge spent more CPU on looks than on the calls themselves.
        """
        looking = self._looking = self._looking or asyncio.Lock()
        async with looking:
            poll = _POLL_S
            while (taken := self._try_take(limit())) is None:
                await asyncio.sleep(_SPREAD.uniform(poll / 2, poll))
                poll = min(poll * 2, _POLL_MAX_S)
            return taken

    @contextlib.contextmanager
    def _counted_waiting(self) -> Iterator[None]:
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1

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
                with self._counted_waiting(), contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(turn.wait(), timeout=_RECHECK_S)
            self._holders += 1
        try:
            if (taken := self._try_take(limit())) is None:
                with self._counted_waiting():
                    taken = await self._wait_for_others(limit)
            index, fd = taken
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                self._held.discard(index)
        finally:
            async with turn:
                self._holders -= 1
                # As many waiters as may go now (the allowed count may have grown), not
                # every one: each woken waiter that finds no room costs a wake-up.
                turn.notify(max(limit() - self._holders, 0))
