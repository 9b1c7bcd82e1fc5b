"""The simulator process: ``python -m n8n_deepeval_pipeline.simulation.process FD``.

Started by ``simulation.launcher`` with the workers' environment (no credential, DeepEval
quiet) in a scratch working folder. It imports DeepEval (without the Anthropic SDK, as
the workers do) and says ``{"ready": import seconds}`` before it reads its one
``SimulationRequest`` (a process started ahead of its request is ready when it comes),
plays every conversation, and sends back one ``{"conversation": …}`` per conversation as
it finishes, and ``{"done": seconds}`` (or ``{"failed": why}``). It exits when its parent
is gone.
"""

from __future__ import annotations

import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker.zygote import exit_with_parent, without_anthropic_sdk


def main() -> None:
    """Play the request's conversations; report each one, then done or failed."""
    connection = Connection(int(sys.argv[1]))
    exit_with_parent()
    started = time.perf_counter()
    with without_anthropic_sdk():
        from n8n_deepeval_pipeline.simulation.simulator import Simulation
    connection.send({"ready": time.perf_counter() - started})
    try:
        request = SimulationRequest.model_validate(connection.recv())
    except (EOFError, OSError):  # started ahead, and not needed after all
        sys.exit(0)

    def report(conversation: Any) -> None:
        connection.send({"conversation": conversation.model_dump(mode="json")})

    started = time.perf_counter()
    try:
        Simulation(request, report).run()
    except Exception as error:  # reported, not raised: the parent names it
        message = redact(f"{type(error).__name__}: {error}", request.secrets)
        connection.send({"failed": message.splitlines()[0][:500] if message else "failed"})
        sys.exit(1)
    connection.send({"done": time.perf_counter() - started})


if __name__ == "__main__":
    main()
