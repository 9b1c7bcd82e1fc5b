"""FakeHarnessN8n: a test double of the part of n8n a harness run uses (not n8n itself).

The public API's workflows (list, create, publish, unpublish, archive, delete; executions
listed as none) and the webhooks of published workflows. A published workflow's webhook
answers as a deterministic agent would: ``answer(system, text)`` (signing off only when
its system message asks for it), the system message read
from the workflow it was given (node ``AI Agent``, ``options.systemMessage``) and the text
from the request (``chatInput`` or ``input``). ``POST /answer {system, input}`` answers the
same for a caller that is not a harness run (DeepEval's own model callback, in the parity
test). Every webhook call is counted per workflow, and every workflow created is kept.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.n8n_api.fake_n8n import _FakeServer, _send_json

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


def webhook_path(workflow: dict[str, Any]) -> str | None:
    for node in workflow["nodes"]:
        if node["type"] == "n8n-nodes-base.webhook":
            return str(node["parameters"]["path"])
    return None


class FakeHarnessN8n(_FakeServer):
    """Workflows by id; their webhooks served while they are published."""

    def __init__(self) -> None:
        self.workflows: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.active: set[str] = set()
        self.calls: Counter[str] = Counter()  # webhook calls per workflow id
        self._ids = itertools.count(1)
        super().__init__()

    def api(self, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
        if parts == ["workflows"] and method == "GET":
            data = [{"id": key, "name": wf["name"], "active": key in self.active}
                    for key, wf in self.workflows.items()]  # fmt: skip
            return 200, {"data": data, "nextCursor": None}
        if parts == ["workflows"]:
            key = f"wf{next(self._ids)}"
            self.workflows[key] = body
            self.created.append(body)
            return 200, {"id": key, **body}
        if parts == ["executions"]:
            return 200, {"data": [], "nextCursor": None}
        if parts[0] == "workflows" and parts[1] in self.workflows:
            action = parts[2] if len(parts) > 2 else ("delete" if method == "DELETE" else "get")
            if action == "publish":
                self.active.add(parts[1])
            elif action == "unpublish":
                self.active.discard(parts[1])
            elif action == "delete":
                del self.workflows[parts[1]]
            return 200, {"id": parts[1]}
        return 404, {"message": "Not Found"}

    def webhook(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        found = [key for key in self.active if webhook_path(self.workflows[key]) == path]
        if not found:
            return 404, {"message": f"The requested webhook {path} is not registered."}
        if method == "GET":
            return 404, {"message": f"This webhook {path} is not registered for GET requests."}
        (key,) = found
        self.calls[key] += 1
        text = str(body.get("chatInput") or body.get("input") or "")
        return 200, {"output": answer(system_message(self.workflows[key]), text)}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _respond(self, method: str) -> None:
                path = urlsplit(self.path).path
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null") if length else None
                if path.startswith("/api/v1/"):
                    status, reply = fake.api(method, path.removeprefix("/api/v1/").split("/"), body)
                elif path.startswith("/webhook/"):
                    status, reply = fake.webhook(method, path.removeprefix("/webhook/"), body or {})
                elif path == "/answer":
                    status, reply = 200, {"output": answer(body["system"], body["input"])}
                else:
                    status, reply = 404, {"message": "Not Found"}
                _send_json(self, status, reply)

            def do_GET(self) -> None:
                self._respond("GET")

            def do_POST(self) -> None:
                self._respond("POST")

            def do_DELETE(self) -> None:
                self._respond("DELETE")

            def log_message(self, *_: Any) -> None:
                pass

        return Handler
