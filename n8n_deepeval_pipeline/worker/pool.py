"""The worker pool: warmed CPython processes that run DeepEval metrics.

Metrics never run in the Dagster process. A zygote interpreter imports DeepEval and
every catalog metric once, in a sanitised environment and a scratch working directory,
and every worker is forked from it (milliseconds, not a second and a half of imports).
Each worker runs one evaluation at a time: DeepEval keeps process-wide
state (its trace manager, patched event loops, module caches) that evaluations sharing
an interpreter would share too. Concurrency is therefore the number of workers; judge
calls are I/O-bound, so a pool larger than the CPU count keeps the judge busy while the
CPU-bound part stays small (one HTTP client per worker, no per-call TLS set-up).

Slots take tasks first-in first-out and stream results back as they finish. A worker
that dies or overruns its timeout is killed and replaced, and only its evaluation
becomes an error row. ``cleanSession`` replaces the worker after its evaluation, and a
worker is recycled after ``max_evaluations`` evaluations or above ``max_rss_mb``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.evaluation import ErrorKind, EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.worker.environment import worker_environment

_LOG = logging.getLogger(__name__)
MIN_POOL_SIZE, MAX_POOL_SIZE = 1, 64
DEFAULT_EVALUATOR = "n8n_deepeval_pipeline.worker.evaluate:Evaluator"
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


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


class _Zygote:
    """The warmed interpreter that forks workers (see ``worker.zygote``)."""

    def __init__(
        self, scratch: Path, log_path: Path, evaluator: str, environment: dict[str, str]
    ) -> None:
        parent_end, child_end = Pipe(duplex=True)
        self.environment = environment
        self.log_path = log_path
        self.control: Connection = parent_end
        module = "n8n_deepeval_pipeline.worker.zygote"
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, str(child_end.fileno()), evaluator],
                pass_fds=[child_end.fileno()],
                env=environment,
                cwd=scratch,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        child_end.close()
        self._lock = threading.Lock()

    def wait_ready(self, timeout_s: float) -> None:
        if not self.control.poll(timeout_s):
            raise WorkerCrashed(f"the worker zygote did not warm up in {timeout_s:g} s")
        try:
            message = self.control.recv()
        except (EOFError, OSError):
            raise WorkerCrashed(self._died()) from None
        if "ready" not in message:
            raise WorkerCrashed(f"the worker zygote sent {message!r} instead of ready")

    def fork(self) -> _Worker:
        """A new worker, forked from the warmed zygote."""
        with self._lock:  # one request and its answer at a time
            try:
                self.control.send({"spawn": True})
                pid = int(self.control.recv()["pid"])
                fd = recv_handle(self.control)
            except (EOFError, OSError):
                raise WorkerCrashed(self._died()) from None
        return _Worker(pid, Connection(fd))

    def _died(self) -> str:
        return f"the worker zygote died (exit code {self.process.poll()}); see {self.log_path}"

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.control.send(None)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.control.close()


class _Worker:
    """One worker process (a child of the zygote) and the pool's end of its connection."""

    def __init__(self, pid: int, connection: Connection) -> None:
        self.pid = pid
        self.connection = connection
        self.evaluations = 0
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

    def run(self, task: EvaluationTask, timeout_s: float) -> tuple[dict[str, Any], bool]:
        try:
            self.connection.send(task.model_dump(mode="python"))
        except (OSError, ValueError) as error:
            raise WorkerCrashed(f"worker {self.pid} connection broke: {error}") from None
        try:
            ready = self.connection.poll(timeout_s)
            message: dict[str, Any] | None = self.connection.recv() if ready else None
        except (EOFError, OSError) as error:
            raise WorkerCrashed(
                f"worker {self.pid} died during the evaluation ({type(error).__name__}: "
                "killed, crashed or out of memory)"
            ) from None
        if message is None:
            raise TimeoutError(f"evaluation took longer than {timeout_s:g} s")
        self.evaluations += 1
        return message["result"], bool(message["clean"])

    def stop(self, grace_s: float = 2.0) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)
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
    ) -> None:
        self.size = clamp_pool_size(size)
        self.timeout_s = timeout_s
        self.max_evaluations = max_evaluations
        self.max_rss_mb = max_rss_mb
        self.start_timeout_s = start_timeout_s
        self.evaluator = evaluator
        self._scratch: Path | None = None
        self._log_path: Path | None = None
        self._worker_failed = False  # keeps the workers' log when the pool closes
        self._zygote: _Zygote | None = None
        self._workers: list[_Worker] = []
        self._busy: dict[int, _Worker] = {}
        self._lock = threading.Lock()
        self.replacements = 0
        self.warmup_s = 0.0
        self.overheads_s: list[float] = []
        self.retired_peak_rss_mb: list[float] = []

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers, by slot."""
        return [worker.pid for worker in self._workers]

    def start(self, secrets: Iterable[str] = ()) -> None:
        """Warm the zygote once, then fork every worker from it.

        ``secrets`` (judge keys) are left out of the environment under any name.
        """
        if self._workers:
            return
        started = time.perf_counter()
        self._scratch = Path(tempfile.mkdtemp(prefix="n8n-deepeval-workers-"))
        # Beside the working folder, not in it: the folder goes with the pool, the log
        # stays when a worker failed.
        self._log_path = self._scratch.with_name(f"{self._scratch.name}.log")
        environment = worker_environment(secrets)
        try:
            self._zygote = _Zygote(self._scratch, self._log_path, self.evaluator, environment)
            self._zygote.wait_ready(self.start_timeout_s)
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
        total = 0
        for task in tasks:
            pending.put(task)
            secrets.update(task.secrets)
            total += 1
        if self._exposes(secrets):
            self.close()  # started before these keys were known: start again without them
        self.start(secrets)
        self._revive_dead()
        done: queue.Queue[EvaluationResult | BaseException] = queue.Queue()
        stop = threading.Event()
        threads = [
            threading.Thread(target=self._slot_loop, args=(slot, pending, done, stop), daemon=True)
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
        environment = self._zygote.environment if self._zygote is not None else {}
        return any(secret in value for value in environment.values() for secret in secrets)

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
    ) -> None:
        while not stop.is_set():
            try:
                task = pending.get_nowait()
            except queue.Empty:
                return
            try:
                result = self._run_on_slot(slot, task, stop)
            except BaseException as error:  # a replacement worker failed to start
                done.put(error)
                return
            if not stop.is_set():
                done.put(result)

    def _run_on_slot(
        self, slot: int, task: EvaluationTask, stop: threading.Event
    ) -> EvaluationResult:
        worker = self._workers[slot]
        started = time.perf_counter()
        with self._lock:
            self._busy[slot] = worker
        try:
            payload, clean = worker.run(task, task.timeout_s)
        except (TimeoutError, WorkerCrashed) as error:
            kind: ErrorKind = "timeout" if isinstance(error, TimeoutError) else "worker_crash"
            message = f"evaluation killed: {error}"
            if kind == "worker_crash":
                # A worker killed because the caller gave up (``stop``) did not fail.
                self._worker_failed = self._worker_failed or not stop.is_set()
                message = f"{error}; its output is in {self._log_path}"
            self._replace(slot)
            elapsed = round(time.perf_counter() - started, 4)
            return EvaluationResult.failed(
                task.task_id, kind, message, worker_pid=worker.pid, latency_s=elapsed
            )
        finally:
            with self._lock:
                self._busy.pop(slot, None)
        result = EvaluationResult.model_validate({**payload, "worker_pid": worker.pid})
        self.overheads_s.append(time.perf_counter() - started - result.latency_s)
        if task.clean_session or not clean or self._worn_out(worker):
            self._replace(slot)
        return result

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
        for worker in workers:
            worker.stop()
        if self._zygote is not None:
            self._zygote.stop()
            self._zygote = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if self._log_path is not None:
            if self._worker_failed:
                _LOG.warning("a worker failed; the workers' log is kept in %s", self._log_path)
            else:
                self._log_path.unlink(missing_ok=True)
            self._log_path, self._worker_failed = None, False
