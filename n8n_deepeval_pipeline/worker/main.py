"""Entry point of a worker process: ``python -m n8n_deepeval_pipeline.worker.main FD [EVALUATOR]``.

The parent passes one end of a socket pair as file descriptor FD. The worker imports
DeepEval and every catalog metric (the parent has already sanitised the environment
and chosen a scratch working directory), says it is ready, then answers one task at a
time until the connection closes or it is told to stop. EVALUATOR (``module:Class``,
default the pipeline's Evaluator) lets tests put a named test double in its place.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any


def _die_with_parent() -> None:
    """Exit as soon as the parent is gone, even in the middle of an evaluation.

    (PR_SET_PDEATHSIG would fire when the parent *thread* that spawned the worker
    ends, and the pool spawns replacements from short-lived threads.)
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


DEFAULT_EVALUATOR = "n8n_deepeval_pipeline.worker.evaluate:Evaluator"


def _load_evaluator(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)()


def serve(connection: Connection, evaluator_path: str = DEFAULT_EVALUATOR) -> None:
    """Answer tasks until the parent hangs up."""
    from n8n_deepeval_pipeline.evaluation import EvaluationTask

    evaluator = _load_evaluator(evaluator_path)
    connection.send({"ready": os.getpid()})
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        result = evaluator.evaluate(EvaluationTask.model_validate(message))
        connection.send({"result": result.model_dump(), "clean": evaluator.is_clean()})


def main() -> None:
    """Run the worker on the file descriptor given as the only argument."""
    _die_with_parent()
    connection = Connection(int(sys.argv[1]))
    try:
        serve(connection, *sys.argv[2:3])
    finally:
        connection.close()


if __name__ == "__main__":
    main()
