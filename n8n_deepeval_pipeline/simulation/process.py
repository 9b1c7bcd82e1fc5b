"""The simulator process: ``python -m n8n_deepeval_pipeline.simulation.process FD``.

Started by ``worker.launcher`` for ``simulation.launcher``. It reads one
``SimulationRequest`` (``ask``), imports DeepEval (without the Anthropic SDK, as the
workers do), plays every conversation, and sends ``ready`` (the import's seconds), an
``update`` per conversation as it finishes, and ``done`` (the conversations' seconds), or
``failed`` with why. It exits when its parent is gone.
"""

from __future__ import annotations

import os
import sys
import time

from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.simulation.conversation import SimulatedConversation
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker.child_channel import connect
from n8n_deepeval_pipeline.worker.zygote import without_anthropic_sdk


def main() -> None:
    """Play the request's conversations; report each one, then done or failed."""
    channel = connect()
    asked = channel.receive()
    assert asked is not None
    request = asked.of(SimulationRequest)
    started = time.perf_counter()
    with without_anthropic_sdk():
        from n8n_deepeval_pipeline.simulation.simulator import Simulation
    channel.send("ready", time.perf_counter() - started)

    def report(conversation: SimulatedConversation) -> None:
        channel.send("update", conversation)

    started = time.perf_counter()
    try:
        Simulation(request, report).run()
    except Exception as error:  # reported, not raised: the parent names it
        message = redact(f"{type(error).__name__}: {error}", request.secrets)
        channel.send("failed", message.splitlines()[0][:500] if message else "failed")
        sys.exit(1)
    channel.send("done", time.perf_counter() - started)
    # Skip the interpreter's shutdown of DeepEval's modules: nothing is left to write.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
