"""The zygote: ``python -m n8n_deepeval_pipeline.worker.zygote CONTROL_FD EVALUATOR``.

Importing DeepEval and every catalog metric costs about 2.5 s. The zygote pays
it once (``worker.launcher`` has started it in the workers' sanitised environment and a
scratch working folder), builds the evaluator (EVALUATOR is ``module:Class``; tests put
a named test double there), says ``ready``, and then serves the pool's requests on its
control connection (``worker.child_channel``'s messages), each answered with ``done``:
``spawn`` forks a worker (a fork of a warmed, single-threaded interpreter takes
milliseconds, so warm-up, crash replacement and ``cleanSession`` are cheap); a ``Prepare``
names the metrics the pool is about to run and its judges' providers, whose prompt
templates and answer schemas are built here once, not in every worker
(``worker.warming``). Each worker gets its own socket pair; the zygote hands the pool its
end (file-descriptor passing) and reaps workers that exit. Workers answer tasks until
their connection closes: that connection, the pool's hot path, carries the tasks and
results as they are, without the control messages' envelope. A worker evaluates every
task it is sent at once, each as an asyncio task (the pool decides how many are in
flight, from the worker's CPU and its judge calls held back). Everything exits when the
process above it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.reduction import send_handle
from socket import socketpair
from typing import Any

from pydantic import BaseModel

from n8n_deepeval_pipeline.worker.admission import WINDOW_S
from n8n_deepeval_pipeline.worker.child_channel import Channel, connect, exit_now, exit_with_parent

SPAWN = "spawn"
"""The request for a new worker (answered with its pid, then its connection's descriptor)."""


class Prepare(BaseModel):
    """Build these catalog metrics' templates and schemas for these judge providers."""

    metrics: list[str]
    providers: list[str]


@contextlib.contextmanager
def without_anthropic_sdk() -> Iterator[None]:
    """Import DeepEval as if the Anthropic SDK were not installed.

    DeepEval imports it only for the retry policy of its own Anthropic model, which a
    worker never uses (the pipeline's judge sends its own requests), and it was 2.7 s
    of a 5.2 s import. A pool with an Anthropic judge has it imported in ``prepare``,
    where its answer schemas are converted the way that SDK converts them.
    """
    held_out = "anthropic" not in sys.modules
    if held_out:
        sys.modules["anthropic"] = None  # type: ignore[assignment]  # "import" raises ImportError
    try:
        yield
    finally:
        if held_out and sys.modules.get("anthropic", ...) is None:
            del sys.modules["anthropic"]


def _load_evaluator(path: str) -> Any:
    module, _, name = path.partition(":")
    with without_anthropic_sdk():
        return getattr(importlib.import_module(module), name)()


def serve(connection: Connection, evaluator: Any) -> None:
    """A worker: evaluate every task the pool sends, concurrently, until it hangs up."""
    asyncio.run(_serve(connection, evaluator))


async def _serve(connection: Connection, evaluator: Any) -> None:
    from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask

    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()

    def read() -> None:  # the connection blocks: read it beside the event loop
        while True:
            try:
                message = connection.recv()
            except (EOFError, OSError):
                message = None
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message is None:
                return

    threading.Thread(target=read, name="task-reader", daemon=True).start()
    running: set[asyncio.Task[None]] = set()

    async def answer(task: Any) -> None:
        try:
            result = await evaluator.evaluate(task)
        except Exception as error:  # never raised by design; an answer is owed all the same
            result = EvaluationResult.failed(task.task_id, "metric_error", repr(error)[:300])
        running.discard(asyncio.current_task())
        # DeepEval's globals are put back when nothing else is in flight.
        clean = evaluator.tidy() if not running else True
        held_back = evaluator.held_back()
        connection.send({"result": result.model_dump(), "clean": clean, "held_back": held_back})

    async def report_load() -> None:
        # The pool gives a worker more evaluations only while the judge has room for them.
        while True:
            await asyncio.sleep(WINDOW_S)
            if running:
                connection.send({"held_back": evaluator.held_back()})

    reporter = asyncio.create_task(report_load())
    while (message := await inbox.get()) is not None:
        job = asyncio.create_task(answer(EvaluationTask.model_validate(message)))
        running.add(job)
    reporter.cancel()


def freeze_warm_heap() -> None:
    """Leave the warmed interpreter's objects out of every later garbage collection.

    DeepEval and the catalog leave ~290,000 objects that live as long as the worker: each
    full collection walked them all (about 1 ms of CPU per evaluation, amortised), and
    its writes to their headers copied the pages a fork shares with the zygote.
    """
    gc.collect()
    gc.freeze()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _fork_worker(control: Channel, evaluator: Any, pool_pid: int) -> int:
    pool_end, worker_end = socketpair()
    pid = os.fork()
    if pid == 0:  # the worker
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        control.close()
        pool_end.close()
        exit_with_parent()
        connection = Connection(worker_end.detach())
        try:
            serve(connection, evaluator)
        finally:
            os._exit(0)
    worker_end.close()
    control.send("done", pid)
    send_handle(control.connection, pool_end.fileno(), pool_pid)
    pool_end.close()
    return pid


def main() -> None:
    """Warm up once, then serve the pool's requests until it hangs up.

    No watcher thread here (forking a threaded process is unsafe): the control
    connection closes when the pool dies, which ends the loop.
    """
    control = connect(watch_parent=False)
    evaluator = _load_evaluator(sys.argv[2])
    freeze_warm_heap()
    pool_pid = os.getppid()
    workers: set[int] = set()
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    control.send("ready", os.getpid())
    while True:
        try:
            message = control.receive()
        except ConnectionError:
            break
        if message is None or message.kind != "ask":
            break
        if message.body != SPAWN:  # what the pool is about to run, before its forks
            asked = message.of(Prepare)
            control.send("done", evaluator.prepare(asked.metrics, asked.providers))
            freeze_warm_heap()
            continue
        workers.add(_fork_worker(control, evaluator, pool_pid))
    control.close()
    _stop_workers(workers)
    exit_now(0)


def _stop_workers(workers: set[int]) -> None:
    """Kill whatever the pool left running and reap every worker before exiting."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


if __name__ == "__main__":
    main()
