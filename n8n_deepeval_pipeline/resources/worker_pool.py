"""The worker pool: warmed CPython processes that run DeepEval metrics.

Metrics never run in the Dagster process. Each worker is a separate interpreter with
DeepEval imported, a sanitised environment and a scratch working directory; a slot
borrows tasks first-in first-out. A worker that dies or overruns its timeout is killed
and replaced, and only its evaluation becomes an error row. ``cleanSession`` replaces
the worker after its evaluation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask

_LOG = logging.getLogger(__name__)
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
MIN_POOL_SIZE, MAX_POOL_SIZE = 1, 32

# Settings DeepEval reads at import: no telemetry, no dotenv, no key file, no writes.
_WORKER_ENV = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    "PYTHONUNBUFFERED": "1",
}
# Removed so DeepEval cannot find a key on its own: the judge comes only from model=.
_DROPPED_ENV = ("DEEPEVAL_UPDATE_WARNING_OPT_IN", "CONFIDENT_API_KEY", "AZURE_OPENAI_ENDPOINT")


def worker_environment() -> dict[str, str]:
    """The parent's environment without secrets, plus DeepEval's quiet settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in _DROPPED_ENV and not name.endswith(("_API_KEY", "_TOKEN", "_SECRET"))
    }
    env.update(_WORKER_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


class WorkerCrashed(RuntimeError):
    """The worker process died or its connection broke."""


class _Worker:
    """One worker process and the parent's end of its connection."""

    def __init__(self, scratch: Path, log_path: Path) -> None:
        parent_end, child_end = Pipe(duplex=True)
        self.connection: Connection = parent_end
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "n8n_deepeval_pipeline.worker.main",
                    str(child_end.fileno()),
                ],
                pass_fds=[child_end.fileno()],
                env=worker_environment(),
                cwd=scratch,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        child_end.close()
        self.evaluations = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, timeout_s: float) -> None:
        message = self._receive(timeout_s, "start")
        if "ready" not in message:
            raise WorkerCrashed(f"worker {self.pid} sent {message!r} instead of ready")

    def run(self, task: EvaluationTask, timeout_s: float) -> tuple[dict[str, Any], bool]:
        try:
            self.connection.send(task.model_dump(mode="python"))
        except (OSError, ValueError) as error:
            raise WorkerCrashed(f"worker {self.pid} connection broke: {error}") from None
        message = self._receive(timeout_s, "evaluation")
        self.evaluations += 1
        return message["result"], bool(message["clean"])

    def _receive(self, timeout_s: float, what: str) -> dict[str, Any]:
        try:
            ready = self.connection.poll(timeout_s)
            message: dict[str, Any] | None = self.connection.recv() if ready else None
        except (EOFError, OSError) as error:
            try:
                code = self.process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
            raise WorkerCrashed(
                f"worker {self.pid} died during {what} (exit code {code}): {type(error).__name__}"
            ) from None
        if message is None:
            raise TimeoutError(f"{what} took longer than {timeout_s:g} s")
        return message

    def stop(self, grace_s: float = 2.0) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()
        self.connection.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.connection.close()


class WorkerPool:
    """N warmed workers; ``evaluate`` streams results as they finish."""

    def __init__(self, size: int, timeout_s: float, start_timeout_s: float = 180.0) -> None:
        self.size = min(max(size, MIN_POOL_SIZE), MAX_POOL_SIZE)
        if self.size != size:
            _LOG.warning("pool size %s clamped to %s", size, self.size)
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self._scratch: Path | None = None
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self.replacements = 0

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers, by slot."""
        return [worker.pid for worker in self._workers]

    def start(self) -> None:
        """Spawn every worker at once, then wait until each has imported DeepEval."""
        if self._workers:
            return
        self._scratch = Path(tempfile.mkdtemp(prefix="n8n-deepeval-workers-"))
        self._workers = [self._spawn() for _ in range(self.size)]
        try:
            for worker in self._workers:
                worker.wait_ready(self.start_timeout_s)
        except Exception:
            self.close()
            raise

    def _spawn(self) -> _Worker:
        assert self._scratch is not None
        return _Worker(self._scratch, self._scratch / "workers.log")

    def _replace(self, slot: int) -> None:
        old = self._workers[slot]
        old.kill()
        fresh = self._spawn()
        fresh.wait_ready(self.start_timeout_s)
        with self._lock:
            self._workers[slot] = fresh
            self.replacements += 1

    def evaluate(self, tasks: Iterable[EvaluationTask]) -> Iterator[EvaluationResult]:
        """Run the tasks on the workers; yield each result as soon as it is ready."""
        self.start()
        pending: queue.Queue[EvaluationTask] = queue.Queue()
        total = 0
        for task in tasks:
            pending.put(task)
            total += 1
        done: queue.Queue[EvaluationResult | BaseException] = queue.Queue()
        stop = threading.Event()
        threads = [
            threading.Thread(target=self._slot_loop, args=(slot, pending, done, stop), daemon=True)
            for slot in range(min(self.size, total))
        ]
        for thread in threads:
            thread.start()
        try:
            for _ in range(total):
                outcome = done.get()
                if isinstance(outcome, BaseException):
                    raise outcome
                yield outcome
        finally:
            stop.set()
            for thread in threads:
                thread.join()

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
                done.put(self._run_on_slot(slot, task))
            except BaseException as error:  # a replacement worker failed to start
                done.put(error)
                return

    def _run_on_slot(self, slot: int, task: EvaluationTask) -> EvaluationResult:
        worker = self._workers[slot]
        started = time.perf_counter()
        try:
            payload, clean = worker.run(task, task.timeout_s)
        except TimeoutError as error:
            self._replace(slot)
            return EvaluationResult.failed(
                task.task_id,
                "timeout",
                f"evaluation killed: {error}",
                worker_pid=worker.pid,
                latency_s=round(time.perf_counter() - started, 4),
            )
        except WorkerCrashed as error:
            self._replace(slot)
            return EvaluationResult.failed(
                task.task_id,
                "worker_crash",
                str(error),
                worker_pid=worker.pid,
                latency_s=round(time.perf_counter() - started, 4),
            )
        result = EvaluationResult.model_validate({**payload, "worker_pid": worker.pid})
        if task.clean_session or not clean:
            self._replace(slot)
        return result

    def close(self) -> None:
        """Stop every worker and remove the scratch directory."""
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


class WorkerPoolResource(dg.ConfigurableResource):
    """The worker pool as a Dagster resource: started on first use, stopped with the step."""

    size: int = 4
    timeout_s: float = 300.0

    _pool: WorkerPool | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._pool = WorkerPool(self.size, self.timeout_s)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._pool is not None:
            self._pool.close()

    @property
    def pool(self) -> WorkerPool:
        """The pool of this step (a fresh one outside Dagster execution)."""
        if self._pool is None:
            self._pool = WorkerPool(self.size, self.timeout_s)
        return self._pool

    def evaluate(self, tasks: Iterable[EvaluationTask]) -> Iterator[EvaluationResult]:
        """Stream results of the tasks as the workers finish them."""
        return self.pool.evaluate(tasks)
