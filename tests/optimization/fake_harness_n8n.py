"""FakeHarnessN8n: the harness n8n of tests/n8n_api/fake_n8n.py (a test double, not n8n
itself) whose copies answer as a deterministic agent would.

``answer(system, text)`` (signing off only when its system message asks for it), the system
message read from the copy it was given (node ``AI Agent``, ``options.systemMessage``) and
the text from the request (``chatInput`` or ``input``). ``POST /answer {system, input}``
answers the same for a caller that is not a harness run (DeepEval's own model callback, in
the parity test). Every webhook call is counted per copy, and every copy created is kept.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tests.n8n_api.fake_n8n import FakeN8nHarness

AGENT = "AI Agent"


SIGN_OFF = "Kind regards, Acme."


def answer(system: str, text: str) -> str:
    """What the loopback agent answers ``text`` with under the system message ``system``.

    It signs off only when the system message asks for the sign-off.
    """
    mark = hashlib.sha256(f"{system}\n{text}".encode()).hexdigest()[:10]
    return f"Re: {text} [{mark}]" + (f" {SIGN_OFF}" if SIGN_OFF in system else "")


def system_message(workflow: dict[str, Any]) -> str:
    node = next(node for node in workflow["nodes"] if node["name"] == AGENT)
    return str((node.get("parameters") or {}).get("options", {}).get("systemMessage", ""))


def _agent(copy: dict[str, Any], body: Any) -> tuple[int, Any]:
    text = str(body.get("chatInput") or body.get("input") or "")
    return 200, {"output": answer(system_message(copy), text)}


class FakeHarnessN8n(FakeN8nHarness):
    """The harness n8n whose copies answer as ``answer``; ``POST /answer`` too."""

    def __init__(self) -> None:
        super().__init__(_agent)

    def other(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/answer" and method == "POST":
            return 200, {"output": answer(body["system"], body["input"])}
        return super().other(method, path, body)
