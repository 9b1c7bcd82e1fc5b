"""FakeN8nWebhooks: a test double of n8n's webhook endpoints on loopback (not n8n itself).

Each path answers like one kind of workflow; every request is counted and kept, so a
test can check what was sent and how often.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "s3cr3t-webhook-token-0042"


class FakeN8nWebhooks:
    """Webhook paths: /webhook/agent, /error, /fail500…, /slow, /items, /session, /echo-get,
    /refunds-fail (the agent, but a call about a refund fails with HTTP 500)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.turns: Counter[str] = Counter()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeN8nWebhooks:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        name = path.rsplit("/", 1)[-1]
        text = (
            str(body.get("input") or body.get("chatInput") or "") if isinstance(body, dict) else ""
        )
        if name == "refunds-fail" and "refund" in text:
            return 500, {"message": "Workflow execution failed"}
        if name in ("agent", "refunds-fail"):
            steps = [{"action": {"tool": "calculator", "toolInput": {"input": "6*7"}},
                      "observation": "42"}] if "6*7" in text else []  # fmt: skip
            return 200, {"output": f"Echo: {text}", "intermediateSteps": steps}
        if name == "error":
            return 200, {"error": "upstream model failed"}
        if name.startswith("fail500"):  # n8n quotes the webhook's path in such errors
            return 500, {"message": f"Workflow could not be started for {path}"}
        if name == "slow":
            time.sleep(2)
            return 200, {"output": "late"}
        if name == "items":
            return 200, [{"json": {"text": "from an item list", "sid": "s-9"}}]
        if name == "echo-get":
            return 200, {"output": f"query {json.dumps(body, sort_keys=True)}"}
        if name == "session":
            session = body.get("sessionId", "")
            self.turns[session] += 1
            return 200, {"output": f"turn {self.turns[session]} of {session}: {text}"}
        return 404, {"message": f"The requested webhook {path} is not registered."}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _respond(self, body: Any) -> None:
                path = urlsplit(self.path).path
                fake.calls[path] += 1
                fake.requests.append(
                    {"path": path, "target": self.path, "body": body, "headers": dict(self.headers)}
                )
                status, answer = fake.answer(path, body)
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._respond(json.loads(self.rfile.read(length) or b"null"))

            do_PUT = do_POST

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                self._respond({key: values[0] for key, values in query.items()})

            def log_message(self, *_: Any) -> None:
                pass

        return Handler
