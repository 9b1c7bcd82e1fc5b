"""The simulator process started, fed and watched from the calling process (no DeepEval here).

The process gets the workers' environment (no credential: the judge's key and the
target's URL travel in the request over a private connection) and a scratch working
folder, removed afterwards; its log is kept beside the folder when it failed. It is
killed if the caller stops waiting (an error, an interrupted run), and exits by itself
when the caller dies.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
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


def simulate(
    request: SimulationRequest, finished: Finished | None = None
) -> tuple[list[SimulatedConversation], SimulationTimes]:
    """Every run's conversation, in the request's order, and how long the process took."""
    scratch = Path(tempfile.mkdtemp(prefix="n8n-deepeval-simulation-"))
    log_path = scratch.with_name(f"{scratch.name}.log")
    parent_end, child_end = Pipe(duplex=True)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", _MODULE, str(child_end.fileno())],
            pass_fds=[child_end.fileno()],
            env=worker_environment(request.secrets),
            cwd=scratch,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    child_end.close()
    succeeded = False
    try:
        parent_end.send(request)
        found, times = _receive(parent_end, process, len(request.runs), finished, log_path)
        succeeded = True
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        parent_end.close()
        shutil.rmtree(scratch, ignore_errors=True)
        if succeeded:
            log_path.unlink(missing_ok=True)
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
