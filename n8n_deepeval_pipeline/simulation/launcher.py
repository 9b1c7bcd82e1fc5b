"""The simulator process started, fed and watched from the calling process (no DeepEval here).

The process gets the workers' environment (no credential: the judge's key and the
target's URL travel in the request over a private connection) and a scratch working
folder, removed afterwards; its log is kept beside the folder when it failed. It is
killed if the caller stops waiting (an error, an interrupted run), and exits by itself
when the caller dies. Within ``started_ahead()`` (a CLI run whose steps run in its own
process) one is started at once: DeepEval's import (~2 s of CPU) then overlaps the run's
set-up, and the simulation step finds it ready, unless its environment holds one of the
request's credentials (then another is started without them).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from n8n_deepeval_pipeline.simulation.conversation import SimulatedConversation
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker.environment import worker_environment

_MODULE = "n8n_deepeval_pipeline.simulation.process"
Finished = Callable[[SimulatedConversation, int, int], None]  # conversation, done, total


class SimulationFailed(RuntimeError):
    """The simulator process failed or died; the message says why and where its log is."""


class SimulationTimes(BaseModel):
    """How long the simulator process took: DeepEval's import, and the conversations."""

    import_s: float = 0.0
    simulate_s: float = 0.0


class _Process:
    """A simulator process, its scratch folder and log, and this side of its connection."""

    def __init__(self, secrets: list[str]) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="n8n-deepeval-simulation-"))
        self.log_path = self.scratch.with_name(f"{self.scratch.name}.log")
        self.connection, child_end = Pipe(duplex=True)
        self.environment = worker_environment(secrets)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", _MODULE, str(child_end.fileno())],
                pass_fds=[child_end.fileno()],
                env=self.environment,
                cwd=self.scratch,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        child_end.close()

    def fit_for(self, secrets: list[str]) -> bool:
        """Alive, without any of ``secrets`` in its environment."""
        exposed = any(secret in value for value in self.environment.values() for secret in secrets)
        return not exposed and self.process.poll() is None

    def stop(self, succeeded: bool) -> None:
        """Kill it if it still runs; its folder goes, its log too unless it failed."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.connection.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if succeeded:
            self.log_path.unlink(missing_ok=True)


_AHEAD: list[_Process] = []  # started ahead of its request, while ``started_ahead`` lasts
_AHEAD_LOCK = threading.Lock()


@contextlib.contextmanager
def started_ahead() -> Iterator[None]:
    """A simulator process started now, for the first simulation of the block."""
    process = _Process([])
    with _AHEAD_LOCK:
        _AHEAD.append(process)
    try:
        yield
    finally:
        with _AHEAD_LOCK:
            untaken = process in _AHEAD
            if untaken:
                _AHEAD.remove(process)
        if untaken:
            process.stop(succeeded=True)


def _taken(secrets: list[str]) -> _Process | None:
    with _AHEAD_LOCK:
        for process in _AHEAD:
            if process.fit_for(secrets):
                _AHEAD.remove(process)
                return process
    return None


def simulate(
    request: SimulationRequest, finished: Finished | None = None
) -> tuple[list[SimulatedConversation], SimulationTimes]:
    """Every run's conversation, in the request's order, and how long the process took."""
    simulator = _taken(request.secrets) or _Process(request.secrets)
    process, log_path = simulator.process, simulator.log_path
    succeeded = False
    try:
        simulator.connection.send(request)
        found, times = _receive(
            simulator.connection, process, len(request.runs), finished, log_path
        )
        succeeded = True
    finally:
        simulator.stop(succeeded)
    missing = [golden.run_id for golden in request.runs if golden.run_id not in found]
    if missing:
        raise SimulationFailed(f"the simulator reported no conversation for {missing[:3]}")
    return [found[golden.run_id] for golden in request.runs], times


def _receive(
    connection: Connection,
    process: subprocess.Popen[bytes],
    total: int,
    finished: Finished | None,
    log_path: Path,
) -> tuple[dict[str, SimulatedConversation], SimulationTimes]:
    found: dict[str, SimulatedConversation] = {}
    times = SimulationTimes()
    while True:
        message = _next_message(connection, process, log_path)
        if "conversation" in message:
            conversation = SimulatedConversation.model_validate(message["conversation"])
            found[conversation.run_id] = conversation
            if finished is not None:
                finished(conversation, len(found), total)
        elif "ready" in message:
            times.import_s = float(message["ready"])
        elif "failed" in message:
            raise SimulationFailed(f"the simulation failed: {message['failed']} (log: {log_path})")
        elif "done" in message:
            times.simulate_s = float(message["done"])
            return found, times


def _next_message(
    connection: Connection, process: subprocess.Popen[bytes], log_path: Path
) -> dict[str, Any]:
    """The process's next message; it may take as long as a conversation takes."""
    while not connection.poll(0.5):
        if process.poll() is not None:
            with contextlib.suppress(EOFError, OSError):
                if connection.poll(0):  # its last words, sent before it exited
                    break
            raise SimulationFailed(
                f"the simulator process exited with code {process.returncode} (log: {log_path})"
            )
    try:
        message: dict[str, Any] = connection.recv()
    except (EOFError, OSError):
        raise SimulationFailed(f"the simulator process died (log: {log_path})") from None
    return message
