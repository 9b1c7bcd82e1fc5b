"""The red team's worker process, from the step's side: started, asked, answered, stopped.

DeepTeam never runs in the step's process: a worker process (``red_team.worker``) is
started for a request, in a scratch working folder and an environment without
credentials (the judge's key travels inside the request, as it does to the metric
workers), with DeepTeam's telemetry off. While it plays attacks, every message it has for
the workflow is answered here by ``target``, up to ``maxConcurrency`` at once; each
attack's outcome is handed to ``on_outcome`` as it arrives. Its output goes to a log file
beside the scratch folder, kept (and named in the error) when it fails.

Within ``started_ahead()`` (a CLI run whose steps run in its own process), one worker is
started at once and kept between requests: DeepTeam's import (~2 s of CPU) overlaps the
run's start-up, and the attack set's generation and its play share one process instead
of importing DeepTeam twice. A kept worker whose environment holds a request's credential
is never asked; another is started without it.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.red_team.protocol import (
    DEEPTEAM_ENV,
    AttackOutcome,
    AttackRequest,
    Generated,
    GenerateRequest,
    TargetCall,
    TargetReply,
)
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.worker.environment import worker_environment

Target = Callable[[TargetCall], TargetReply]
_MODULE = "n8n_deepeval_pipeline.red_team.worker"


class RedTeamWorkerError(RuntimeError):
    """The worker failed, died or ran out of time; the message says which, and where its log is."""


class _Process:
    """One worker process and the step's end of its connection."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets
        self.scratch = Path(tempfile.mkdtemp(prefix="n8n-deepeval-red-team-"))
        self.log_path = self.scratch.with_name(f"{self.scratch.name}.log")
        ours, theirs = Pipe(duplex=True)
        self.environment = {**worker_environment(secrets), **DEEPTEAM_ENV}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", _MODULE, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=self.environment,
                cwd=self.scratch,  # DeepEval and DeepTeam make folders where they start
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        theirs.close()
        self.connection: Connection = ours
        self.failed = False
        self.idle = True  # no request of its own in progress: it may be asked another

    def fit_for(self, secrets: list[str]) -> bool:
        """Alive and idle, without any of ``secrets`` in its environment."""
        exposed = any(secret in value for value in self.environment.values() for secret in secrets)
        return self.idle and not self.failed and not exposed and self.process.poll() is None

    def ask(self, request: dict[str, Any]) -> None:
        """Send it a request (it is busy until its last message is read)."""
        self.idle = False
        self.connection.send(request)

    def stop(self) -> None:
        self.connection.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if not self.failed:
            self.log_path.unlink(missing_ok=True)

    def error(self, reason: str) -> RedTeamWorkerError:
        self.failed = True
        return RedTeamWorkerError(
            f"the red team's worker {reason}; its output is in {self.log_path}"
        )


class _Kept:
    """Workers started ahead or kept after a request, while a ``started_ahead`` block lasts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blocks = 0
        self.workers: list[_Process] = []

    def take(self, secrets: list[str]) -> _Process | None:
        """A kept worker fit for a request with these credentials (the others are stopped)."""
        with self.lock:
            taken = next((w for w in self.workers if w.fit_for(secrets)), None)
            unfit = [w for w in self.workers if w is not taken and not w.fit_for([])]
            self.workers = [w for w in self.workers if w is not taken and w not in unfit]
        for worker in unfit:
            worker.stop()
        return taken

    def keep(self, process: _Process) -> bool:
        """Keep a worker that answered its request whole, while a block lasts."""
        with self.lock:
            kept = self.blocks > 0 and process.fit_for([])
            if kept:
                self.workers.append(process)
        return kept


_KEPT = _Kept()


@contextlib.contextmanager
def started_ahead() -> Iterator[None]:
    """A worker started now and kept between the requests made while the block lasts."""
    with _KEPT.lock:
        _KEPT.blocks += 1
        _KEPT.workers.append(_Process([]))
    try:
        yield
    finally:
        with _KEPT.lock:
            _KEPT.blocks -= 1
            left = [] if _KEPT.blocks else _KEPT.workers
            if not _KEPT.blocks:
                _KEPT.workers = []
        for worker in left:
            worker.stop()


@contextlib.contextmanager
def _worker(secrets: list[str]) -> Iterator[_Process]:
    process = _KEPT.take(secrets) or _Process(secrets)
    try:
        yield process
    finally:
        if not _KEPT.keep(process):
            process.stop()


def generate(request: GenerateRequest, timeout_s: float) -> Generated:
    """The attack set, generated by DeepTeam in a worker process."""
    with _worker(request.judge.secrets) as process:
        process.ask({"generate": request.model_dump(mode="python")})
        message = _next(process, time.monotonic() + timeout_s)
        if "generated" not in message:
            raise process.error(f"sent {sorted(message)} instead of the attack set")
        process.idle = True
        return Generated.model_validate(message["generated"])


def attack(
    request: AttackRequest,
    target: Target,
    on_outcome: Callable[[AttackOutcome], None],
    timeout_s: float,
) -> list[AttackOutcome]:
    """Every seed played ``runs`` times; each message to the workflow answered by ``target``."""
    outcomes: list[AttackOutcome] = []
    deadline = time.monotonic() + timeout_s
    secrets = request.judge.secrets
    replies = threading.Lock()
    with _worker(secrets) as process:
        calls = ThreadPoolExecutor(max_workers=request.concurrency)

        def answer(call: TargetCall) -> None:
            try:
                reply = target(call)
            except Exception as error:  # the workflow's failure is the attack's result
                reason = redact(f"{type(error).__name__}: {error}", secrets)
                reply = TargetReply(call_id=call.call_id, error=reason)
            with replies, contextlib.suppress(OSError, ValueError):
                process.connection.send({"reply": reply.model_dump(mode="python")})

        try:
            process.ask({"attack": request.model_dump(mode="python")})
            while True:
                message = _next(process, deadline)
                if "call" in message:
                    calls.submit(answer, TargetCall.model_validate(message["call"]))
                elif "outcome" in message:
                    outcome = AttackOutcome.model_validate(message["outcome"])
                    outcomes.append(outcome)
                    on_outcome(outcome)
                elif "done" in message:
                    process.idle = True
                    return outcomes
                else:
                    raise process.error(f"sent {sorted(message)} while playing attacks")
        finally:
            # A call still waiting on the workflow is not waited for: its answer has no taker.
            calls.shutdown(wait=False, cancel_futures=True)


def _next(process: _Process, deadline: float) -> dict[str, Any]:
    """The worker's next message; its failure, death or lateness as an error."""
    while not process.connection.poll(1.0):
        if process.process.poll() is not None:
            raise process.error(f"exited with code {process.process.returncode}")
        if time.monotonic() > deadline:
            raise process.error("did not finish in time")
    try:
        message: dict[str, Any] = process.connection.recv()
    except (EOFError, OSError):
        raise process.error(f"died (exit code {process.process.wait()})") from None
    if "failed" in message:  # the worker redacts it already; said here, so it is again
        raise process.error(f"failed: {redact(str(message['failed']), process.secrets)}")
    return message
