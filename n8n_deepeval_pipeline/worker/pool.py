"""The worker pool: warmed CPython processes that run DeepEval metrics.

Metrics never run in the Dagster process. A zygote interpreter imports DeepEval and
every catalog metric once, in a sanitised environment and a scratch working directory,
and every worker is forked from it (milliseconds, not a second and a half of imports).
Each worker runs several evaluations at once, each an asyncio task in a
context of its own (DeepEval's trace and context variables, the judge's usage and cache
namespace are per evaluation); DeepEval's process-wide state is put back whenever the
worker is idle. Judge calls wait on the network, so a few processes keep a judge busy
(one HTTP client per worker, no per-call TLS set-up) while the CPU-bound part stays small.
How many a worker takes at once grows while its CPU and the judge have room, up to
``per_worker`` (``worker.admission``).

Slots take tasks first-in first-out and stream results back as they finish. A worker
that dies or overruns a timeout is killed and replaced; only the evaluation that crashed
it (found by running the ones in flight again in halves) or overran becomes an error row.
``cleanSession`` runs alone and replaces the worker after its evaluation, and a
worker is recycled after ``max_evaluations`` evaluations or above ``max_rss_mb``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import statistics
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.evaluation import ErrorKind, EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.worker.admission import Admission
from n8n_deepeval_pipeline.worker.launcher import (
    Child,
    ChildFailed,
    ChildSpec,
    started_ahead,
    taken_ahead,
)
from n8n_deepeval_pipeline.worker.zygote import SPAWN, Prepare

_LOG = logging.getLogger(__name__)
_ZYGOTE = "n8n_deepeval_pipeline.worker.zygote"
_ANSWER_S = 120.0  # the most a prepare or a fork may take (a prepare builds every schema)
MIN_POOL_SIZE, MAX_POOL_SIZE = 1, 64
DEFAULT_EVALUATOR = "n8n_deepeval_pipeline.worker.evaluate:Evaluator"
# Evaluations in flight per worker at most: judge calls wait on the network, so one process
# keeps many busy at a slow judge; how many below this is fitted (``worker.admission``).
DEFAULT_PER_WORKER = 64
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def clamp_pool_size(size: int) -> int:
    """Keep the pool size in a sane range, warning when it had to change."""
    clamped = min(max(size, MIN_POOL_SIZE), MAX_POOL_SIZE)
    if clamped != size:
        _LOG.warning(
            "pool size %s is outside %s..%s; using %s", size, MIN_POOL_SIZE, MAX_POOL_SIZE, clamped
        )
    return clamped


class WorkerCrashed(RuntimeError):
    """The worker process died or its connection broke."""


def _zygote_spec(evaluator: str) -> ChildSpec:
    return ChildSpec(name="the worker zygote", module=_ZYGOTE, args=(evaluator,), deadline_s=None)


class _Zygote:
    """The warmed interpreter that forks workers (see ``worker.zygote``).

    Started by ``worker.launcher`` (the workers' environment, a scratch working folder of
    its own, its log in the home, which its workers write to as well): the folder goes
    with the pool and the log stays when a worker failed.
    """

    def __init__(self, evaluator: str, secrets: Iterable[str] = ()) -> None:
        self.evaluator = evaluator
        spec = _zygote_spec(evaluator)
        self.child = taken_ahead(spec, secrets) or Child(spec, secrets)
        self.log_path = self.child.log_path
        self._lock = threading.Lock()
        self.prepared: set[str] = set()  # metrics whose templates and schemas it built
        self.providers: set[str] = set()  # the judge providers those schemas are built for

    def _answer(self, within_s: float = _ANSWER_S) -> Any:
        """Its answer to a request; its failure or death as ``WorkerCrashed``."""
        try:
            message = self.child.receive(within_s)
        except ChildFailed as failed:
            raise WorkerCrashed(failed.message) from None
        if message.kind not in ("ready", "done"):
            raise WorkerCrashed(f"the worker zygote sent {message.kind} instead of an answer")
        return message.body

    def _ask(self, body: Any) -> Any:
        try:
            self.child.send("ask", body)
        except ChildFailed as failed:
            raise WorkerCrashed(failed.message) from None
        return self._answer()

    def wait_ready(self, timeout_s: float) -> None:
        self._answer(timeout_s)

    def prepare(self, metrics: set[str], providers: set[str]) -> None:
        """Have it build these metrics' templates and schemas, for the workers it forks.

        The schemas are built as these judge providers are sent them; a provider new to
        it has every metric's schemas built again, the others only the new metrics'.
        """
        new_providers = providers - self.providers
        new = (metrics | self.prepared) if new_providers else metrics - self.prepared
        if not new:
            return
        request = Prepare(metrics=sorted(new), providers=sorted(providers | self.providers))
        with self._lock:
            self._ask(request)
        self.prepared |= new
        self.providers |= new_providers

    def fork(self) -> _Worker:
        """A new worker, forked from the warmed zygote."""
        with self._lock:  # one request and its answer at a time
            pid = int(self._ask(SPAWN))
            try:
                fd = recv_handle(self.child.channel.connection)
            except (EOFError, OSError):
                raise WorkerCrashed(self.child.failure("ended before its answer").message) from None
        return _Worker(pid, Connection(fd))

    def stop(self, keep_log: bool) -> None:
        """Hang up (it stops its workers and exits); keep its log if a worker failed."""
        if keep_log:
            self.child.keep_log()
        self.child.stop()


@contextlib.contextmanager
def warm_ahead(evaluator: str = DEFAULT_EVALUATOR) -> Iterator[None]:
    """Warm a zygote while the caller gets ready, for the first pool of this process.

    Its imports (seconds) then overlap the caller's own start-up on another CPU
    (``worker.launcher.started_ahead``). A pool takes it only if it would start the same
    evaluator and no credential of the pool's tasks is in its environment; one no pool
    took is stopped when the block ends.
    """
    with started_ahead(_zygote_spec(evaluator)):
        yield


class _Worker:
    """One worker process (a child of the zygote) and the pool's end of its connection."""

    def __init__(self, pid: int, connection: Connection) -> None:
        self.pid = pid
        self.connection = connection
        self.evaluations = 0
        self.sent = 0  # evaluations handed to it: its budget counts these
        self.peak_rss_mb = 0.0

    def alive(self) -> bool:
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")

    def rss_mb(self) -> float:
        """Current resident memory (0 once the process is gone)."""
        try:
            pages = int(Path(f"/proc/{self.pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            return 0.0
        rss = pages * _PAGE_SIZE / 2**20
        self.peak_rss_mb = max(self.peak_rss_mb, rss)
        return rss

    def cpu_s(self) -> float | None:
        """CPU seconds it has used, all its threads (None once the process is gone)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS

    def send(self, task: EvaluationTask) -> None:
        self.sent += 1
        try:
            self.connection.send(task.model_dump(mode="python"))
        except (OSError, ValueError) as error:
            raise WorkerCrashed(f"worker {self.pid} connection broke: {error}") from None

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The worker's next message, or None if none came in time.

        A finished evaluation (``result``, whether the worker is ``clean``), or a load
        report; each with the worker's judge calls held back by pacing (``held_back``).
        """
        try:
            message: dict[str, Any] | None = (
                self.connection.recv() if self.connection.poll(max(timeout_s, 0.0)) else None
            )
        except (EOFError, OSError) as error:
            raise WorkerCrashed(
                f"worker {self.pid} died during the evaluation ({type(error).__name__}: "
                "killed, crashed or out of memory)"
            ) from None
        if message is not None and "result" in message:
            self.evaluations += 1
        return message

    def hang_up(self) -> None:
        """Ask it to finish: it exits once its connection says there is no more work."""
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)

    def stop(self, grace_s: float = 2.0) -> None:
        """Wait up to ``grace_s`` for it to exit after ``hang_up``, then kill it."""
        deadline = time.monotonic() + grace_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.kill()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.connection.close()


class WorkerPool:
    """N warmed workers; ``evaluate`` streams results as they finish."""

    def __init__(
        self,
        size: int,
        timeout_s: float,
        *,
        max_evaluations: int = 500,
        max_rss_mb: float = 600.0,
        start_timeout_s: float = 180.0,
        evaluator: str = DEFAULT_EVALUATOR,
        per_worker: int = DEFAULT_PER_WORKER,
    ) -> None:
        self.size = clamp_pool_size(size)
        self.per_worker = max(per_worker, 1)  # evaluations in flight on one worker
        self.timeout_s = timeout_s
        self.max_evaluations = max_evaluations
        self.max_rss_mb = max_rss_mb
        self.start_timeout_s = start_timeout_s
        self.evaluator = evaluator
        self._log_path: Path | None = None
        self._worker_failed = False  # keeps the workers' log when the pool closes
        self._zygote: _Zygote | None = None
        self._workers: list[_Worker] = []
        self._busy: dict[int, _Worker] = {}
        self._lock = threading.Lock()
        self.replacements = 0
        self.in_flight = 0  # evaluations sent and not yet answered, all workers
        self.peak_in_flight = 0
        self.warmup_s = 0.0
        self.overheads_s: list[float] = []
        self.retired_peak_rss_mb: list[float] = []

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers, by slot."""
        return [worker.pid for worker in self._workers]

    def start(
        self,
        secrets: Iterable[str] = (),
        metrics: Iterable[str] = (),
        providers: Iterable[str] = (),
    ) -> None:
        """Warm the zygote once, then fork every worker from it.

        ``secrets`` (judge keys) are left out of the environment under any name; the
        zygote prepares ``metrics`` (catalog slugs) for the judges of ``providers``
        before it forks, for every worker.
        """
        if self._workers:
            if self._zygote is not None:  # for the workers it forks from now on
                self._zygote.prepare(set(metrics), set(providers))
            return
        started = time.perf_counter()
        zygote = _Zygote(self.evaluator, secrets)  # the one warmed ahead, if it fits
        self._zygote, self._log_path = zygote, zygote.log_path
        try:
            self._zygote.wait_ready(self.start_timeout_s)
            self._zygote.prepare(set(metrics), set(providers))
            self._workers = [self._spawn() for _ in range(self.size)]
        except Exception:
            self._worker_failed = True
            self.close()
            raise
        self.warmup_s = time.perf_counter() - started

    def _spawn(self) -> _Worker:
        assert self._zygote is not None
        return self._zygote.fork()

    def _replace(self, slot: int) -> None:
        old = self._workers[slot]
        old.rss_mb()
        old.kill()
        fresh = self._spawn()
        with self._lock:
            self.retired_peak_rss_mb.append(old.peak_rss_mb)
            self._workers[slot] = fresh
            self.replacements += 1

    def _revive_dead(self) -> None:
        for slot, worker in enumerate(self._workers):
            if not worker.alive():
                self._replace(slot)

    def evaluate(self, tasks: Iterable[EvaluationTask]) -> Iterator[EvaluationResult]:
        """Run the tasks on the workers; yield each result as soon as it is ready."""
        pending: queue.Queue[EvaluationTask] = queue.Queue()
        secrets: set[str] = set()
        metrics: set[str] = set()
        providers: set[str] = set()
        total = 0
        for task in tasks:
            pending.put(task)
            secrets.update(task.secrets)
            metrics.add(str(task.config.get("metric")))
            providers.update(judge.provider for judge in task.judges)
            total += 1
        if self._exposes(secrets):
            self.close()  # started before these keys were known: start again without them
        self.start(secrets, metrics, providers)
        self._revive_dead()
        done: queue.Queue[EvaluationResult | BaseException] = queue.Queue()
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=self._slot_loop, args=(slot, pending, done, stop, total), daemon=True
            )
            for slot in range(min(self.size, total))
        ]
        for thread in threads:
            thread.start()
        received = 0
        try:
            while received < total:
                outcome = done.get()
                if isinstance(outcome, BaseException):
                    raise outcome
                received += 1
                yield outcome
        finally:
            stop.set()
            if received < total:
                self._abort_in_flight()
            for thread in threads:
                thread.join()

    def _exposes(self, secrets: set[str]) -> bool:
        """Whether the running zygote's environment holds one of these secrets."""
        return self._zygote is not None and self._zygote.child.holds_any(secrets)

    def _abort_in_flight(self) -> None:
        """The caller gave up (an error or a cancelled run): kill what is still running."""
        with self._lock:
            busy = list(self._busy.values())
        for worker in busy:
            worker.kill()

    def _slot_loop(
        self,
        slot: int,
        pending: queue.Queue[EvaluationTask],
        done: queue.Queue[EvaluationResult | BaseException],
        stop: threading.Event,
        total: int,
    ) -> None:
        admission = Admission.for_pool(self.per_worker, self.size, total)
        feeder = _Feeder(self, slot, pending, admission, stop)
        try:
            while not stop.is_set() and not feeder.finished():
                for result in feeder.step():
                    if not stop.is_set():
                        done.put(result)
        except BaseException as error:  # a replacement worker failed to start
            done.put(error)

    def _failed(
        self, worker: _Worker, task: EvaluationTask, error: Exception, stopped: bool
    ) -> EvaluationResult:
        """The error row of an evaluation whose worker died or overran its timeout."""
        if isinstance(error, TimeoutError):
            kind: ErrorKind = "timeout"
            message = f"evaluation killed: {error}"
        else:
            kind = "worker_crash"
            # A worker killed because the caller gave up (``stop``) did not fail.
            self._worker_failed = self._worker_failed or not stopped
            message = f"{error}; its output is in {self._log_path}"
        return EvaluationResult.failed(task.task_id, kind, message, worker_pid=worker.pid)

    def _count_in_flight(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _worn_out(self, worker: _Worker) -> bool:
        return worker.evaluations >= self.max_evaluations or worker.rss_mb() > self.max_rss_mb

    def stats(self) -> dict[str, Any]:
        """Warm-up time, overhead per evaluation and memory, for the log and benchmarks."""
        live_rss = [worker.rss_mb() for worker in self._workers]  # also updates their peaks
        peaks = [worker.peak_rss_mb for worker in self._workers] + self.retired_peak_rss_mb
        return {
            "workers": self.size,
            "warmup_s": round(self.warmup_s, 3),
            "replacements": self.replacements,
            "peak_in_flight": self.peak_in_flight,
            "median_overhead_ms": round(statistics.median(self.overheads_s) * 1000, 3)
            if self.overheads_s
            else None,
            "peak_rss_mb_per_worker": round(max(peaks), 1) if peaks else None,
            "rss_mb_total": round(sum(live_rss), 1),
        }

    def close(self) -> None:
        """Stop every worker and the zygote; remove the working folder and the log.

        The log is kept when a worker died or did not start: it holds what it printed.
        """
        workers, self._workers = self._workers, []
        for worker in workers:  # all at once: each takes a moment to exit
            worker.hang_up()
        for worker in workers:
            worker.stop()
        if self._zygote is not None:
            self._zygote.stop(keep_log=self._worker_failed)
            self._zygote = None
        if self._log_path is not None and self._worker_failed:
            _LOG.warning("a worker failed; the workers' log is kept in %s", self._log_path)
        self._log_path, self._worker_failed = None, False


class _Feeder:
    """One slot's worker kept busy with as many evaluations in flight as ``admission`` says.

    A crash with several evaluations in flight does not tell which one crashed: they run
    again in two halves, each with nothing else in flight, and a half that crashes is
    halved again, so only one that crashes alone becomes an error row (with 64 in flight,
    12 rounds where one at a time took 63). An evaluation over its timeout is an error
    row; the others in flight with it run again. ``cleanSession`` evaluations run alone,
    and the worker is replaced after them.
    """

    def __init__(
        self,
        pool: WorkerPool,
        slot: int,
        pending: queue.Queue[EvaluationTask],
        admission: Admission,
        stop: threading.Event,
    ) -> None:
        self.pool = pool
        self.stop = stop
        self.slot = slot
        self.pending = pending
        self.admission = admission  # how many in flight on this worker
        admission.begin(pool._workers[slot].cpu_s(), time.monotonic())
        self.again: deque[EvaluationTask] = deque()  # innocent of a timeout: run again
        self.apart: deque[list[EvaluationTask]] = deque()  # each with nothing else in flight
        self.sending: list[EvaluationTask] = []  # the rest of the group being sent apart
        self.in_flight: dict[int, tuple[EvaluationTask, float, bool]] = {}  # sent at, apart
        self.retire = False  # replace the worker once nothing is in flight

    def finished(self) -> bool:
        return not (self.in_flight or self.again or self.apart) and self.pending.empty()

    def _next(self) -> tuple[EvaluationTask, bool] | None:
        """The next task to send and whether it runs apart (None: nothing to send)."""
        if self.retire:
            return None
        if self.sending:
            return self.sending.pop(0), True
        if any(apart for _, _, apart in self.in_flight.values()):
            return None
        if self.apart:
            if self.in_flight:
                return None
            self.sending = self.apart.popleft()
            return self.sending.pop(0), True
        if len(self.in_flight) >= self.admission.cap:
            return None
        if self.pool._workers[self.slot].sent >= self.pool.max_evaluations:
            self.retire = bool(self.in_flight)  # its budget is spent: a fresh one follows
            if not self.in_flight:
                self._replaced()
            return None
        if self.again:
            task = self.again.popleft()
        else:
            try:
                task = self.pending.get_nowait()
            except queue.Empty:
                return None
        if task.clean_session and self.in_flight:
            self.apart.append([task])  # waits until the worker is idle
            return None
        return task, task.clean_session

    def step(self) -> list[EvaluationResult]:
        """Fill the worker, then take what finishes next (or handle a crash or timeout)."""
        worker = self.pool._workers[self.slot]
        while (chosen := self._next()) is not None:
            task, solo = chosen
            self.in_flight[task.task_id] = (task, time.monotonic(), solo)
            self.pool._count_in_flight(+1)
            with self.pool._lock:
                self.pool._busy[self.slot] = worker
            try:
                worker.send(task)
            except WorkerCrashed as error:
                return self._crashed(worker, error)
        if not self.in_flight:
            return self._replaced() if self.retire else []
        deadline = min(sent + task.timeout_s for task, sent, _ in self.in_flight.values())
        try:
            answer = worker.receive(deadline - time.monotonic())
        except WorkerCrashed as error:
            return self._crashed(worker, error)
        if answer is None:
            return self._timed_out(worker)
        self.admission.observe(worker.cpu_s(), time.monotonic(), answer["held_back"])
        if "result" not in answer:  # a load report: fill the worker to its new count
            return []
        return self._finished(worker, answer["result"], bool(answer["clean"]))

    def _finished(self, worker: _Worker, payload: dict[str, Any], clean: bool) -> list[Any]:
        result = EvaluationResult.model_validate({**payload, "worker_pid": worker.pid})
        task, sent, _ = self.in_flight.pop(result.task_id)
        self.pool._count_in_flight(-1)
        self.pool.overheads_s.append(time.monotonic() - sent - result.latency_s)
        if task.clean_session or not clean or self.pool._worn_out(worker):
            self.retire = True
        if self.retire and not self.in_flight:
            self._replaced()
        return [result]

    def _crashed(self, worker: _Worker, error: WorkerCrashed) -> list[EvaluationResult]:
        tasks = [task for task, _, _ in self.in_flight.values()] + self.sending
        self.sending = []
        self._forget_in_flight()
        self._replaced()
        if len(tasks) == 1:
            return [self.pool._failed(worker, tasks[0], error, self.stop.is_set())]
        half = len(tasks) // 2
        self.apart.extend((tasks[:half], tasks[half:]))
        return []

    def _timed_out(self, worker: _Worker) -> list[EvaluationResult]:
        now = time.monotonic()
        late = {t.task_id for t, sent, _ in self.in_flight.values() if sent + t.timeout_s <= now}
        over = [task for task, _, _ in self.in_flight.values() if task.task_id in late]
        self.again.extend(t for t, _, _ in self.in_flight.values() if t.task_id not in late)
        self._forget_in_flight()
        self._replaced()
        timeout = over[0].timeout_s if over else 0.0
        error = TimeoutError(f"evaluation took longer than {timeout:g} s")
        return [self.pool._failed(worker, task, error, self.stop.is_set()) for task in over]

    def _forget_in_flight(self) -> None:
        self.pool._count_in_flight(-len(self.in_flight))
        self.in_flight.clear()

    def _replaced(self) -> list[EvaluationResult]:
        with self.pool._lock:
            self.pool._busy.pop(self.slot, None)
        self.pool._replace(self.slot)
        self.admission.begin(self.pool._workers[self.slot].cpu_s(), time.monotonic())
        self.retire = False
        return []
