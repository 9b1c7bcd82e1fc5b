"""How many evaluations one worker takes at once: fitted to its CPU and to the judge.

An evaluation spends most of its time waiting for judge answers, so the count that keeps
a worker busy grows with the judge's latency: ~16 at 50 ms, hundreds at 2 s. No fixed
count suits both, and a user should not have to guess one. A worker starts with a few
and, every ``WINDOW_S`` (from its load reports and finished evaluations), takes twice as
many (as TCP's slow start does) while two things hold:

- the worker used less than its share of the machine's CPU over the window (``CPU_ROOM``
  of the cores divided among the workers): past that, more in flight would only slow
  each one down;
- no judge call of the worker is held back by the judge's pacing (its rate limits, its
  fitted concurrency, a backoff after a 429): then the judge binds, more evaluations
  would only wait (and run against their timeout meanwhile), so the count halves every
  window, down to the start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

START_PER_WORKER = 16  # the count a worker starts with
CPU_ROOM = 0.75  # share of its CPU share a worker may use and still take more
WINDOW_S = 0.25  # how often the count changes: a shorter window says little of the CPU


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class Admission:
    """One worker's count of evaluations in flight, between ``start`` and ``ceiling``."""

    start: int
    ceiling: int
    cpu_share: float  # CPUs this worker may use: the cores divided among the workers
    cap: int = 0
    _cpu_s: float | None = None
    _at: float = 0.0

    def __post_init__(self) -> None:
        self.start = max(min(self.start, self.ceiling), 1)
        self.cap = self.start

    @classmethod
    def for_pool(cls, ceiling: int, workers: int, batch: int) -> Admission:
        """A worker of ``workers`` sharing this machine, for a batch of ``batch`` tasks.

        It starts with its part of a small batch, so that the batch is spread over the
        workers' CPUs before it is stacked on one.
        """
        start = min(START_PER_WORKER, max(1, -(-batch // workers)))
        return cls(start=start, ceiling=max(ceiling, 1), cpu_share=min(cores() / workers, 1.0))

    def begin(self, cpu_s: float | None, now: float) -> None:
        """The worker's CPU seconds so far, as it is given its first evaluations."""
        self._cpu_s, self._at = cpu_s, now

    def observe(self, cpu_s: float | None, now: float, held_back: int) -> None:
        """The worker's CPU seconds so far and its judge calls held back now.

        Acts once a window has passed since it last did; readings within it are dropped.
        """
        if cpu_s is None or self._cpu_s is None or now - self._at < WINDOW_S:
            return
        busy = (cpu_s - self._cpu_s) / (now - self._at)
        self._cpu_s, self._at = cpu_s, now
        if held_back > 0:
            self.cap = max(self.cap // 2, self.start)
        elif busy < CPU_ROOM * self.cpu_share:
            self.cap = min(self.cap * 2, self.ceiling)
