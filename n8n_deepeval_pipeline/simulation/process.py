"""The simulator process: ``python -m n8n_deepeval_pipeline.simulation.process FD``.

Started by ``worker.launcher`` for ``simulation.launcher``. It imports DeepEval (without
the Anthropic SDK, as the workers do) and sends ``ready`` (the import's seconds) before it
reads its one ``SimulationRequest`` (``ask``): a process started ahead of its request is
ready when it comes. It plays every conversation and sends an ``update`` per
conversation as it finishes, and ``done`` (the conversations' seconds), or ``failed``
with why. It exits when its parent is gone, or hangs up without asking.
"""

from __future__ import annotations

import os
import time

from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.simulation.conversation import SimulatedConversation
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker.child_channel import ChannelClosed, connect, exit_now
from n8n_deepeval_pipeline.worker.zygote import without_anthropic_sdk


def main() -> None:
    """Play the request's conversations; report each one, then done or failed."""
    channel = connect()
    started = time.perf_counter()
    with without_anthropic_sdk():
        from n8n_deepeval_pipeline.simulation.simulator import Simulation
    try:
        channel.send("ready", time.perf_counter() - started)
        asked = channel.receive()
    except ChannelClosed:  # started ahead, and not needed after all
        os._exit(0)
    assert asked is not None
    request = asked.of(SimulationRequest)

    def report(conversation: SimulatedConversation) -> None:
        channel.send("update", conversation)

    started = time.perf_counter()
    try:
        Simulation(request, report).run()
    except Exception as error:  # reported, not raised: the parent names it
        message = redact(f"{type(error).__name__}: {error}", request.secrets)
        channel.send("failed", message.splitlines()[0][:500] if message else "failed")
        exit_now(1)
    channel.send("done", time.perf_counter() - started)
    exit_now(0)


if __name__ == "__main__":
    main()
