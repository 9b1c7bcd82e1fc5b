"""A deterministic stand-in for the workflow, shared by the pipeline and DeepTeam's own path.

Its answer depends on the message alone: a reply quoting the message's end and, for about
half of the messages (by a digest of the text), a call of a refund tool with arguments.
"""

from __future__ import annotations

import hashlib
from typing import Any

REFUND_OUTPUT = '{"mocked": true}'


def answer(message: str) -> tuple[str, list[dict[str, Any]]]:
    """The reply to a message and the tool calls the agent made for it."""
    digest = hashlib.sha256(message.encode("utf-8")).hexdigest()
    calls = (
        [{"name": "Refund", "input_parameters": {"order": digest[:6]}, "output": REFUND_OUTPUT}]
        if int(digest, 16) % 2 == 0
        else []
    )
    return f"Reply to: {message[-40:]}", calls
