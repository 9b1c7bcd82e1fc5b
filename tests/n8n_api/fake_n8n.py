"""FakeN8nWebhooks: a test double of n8n's webhook endpoints on loopback (not n8n itself).

Each path answers like one kind of workflow; every request is counted and kept, so a
test can check what was sent and how often.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

TOKEN = "s3cr3t-webhook-token-0042"


def _send_json(handler: BaseHTTPRequestHandler, status: int, answer: Any) -> None:
    payload = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


class _FakeServer:
    """A loopback HTTP server on a free port, served from a thread while in ``with``."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeN8nWebhooks(_FakeServer):
    """Webhook paths: /webhook/agent, /error, /fail500…, /slow, /items, /session, /echo-get,
    /refunds-fail (the agent, but a call about a refund fails with HTTP 500), /echo-auth (the
    agent, quoting back the Authorization header it was sent, in its output and a step),
    /deep-when-asked (the agent, but a call whose input says "deep" is answered with an
    output nested 50,000 levels deep)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.turns: Counter[str] = Counter()
        super().__init__()

    def answer(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
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
        if name == "deep-when-asked" and "deep" in text:
            return 200, b'{"output": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
        if name in ("echo-auth", "deep-when-asked"):
            sent = headers.get("Authorization", "")
            step = {"action": {"tool": "lookup", "toolInput": {"auth": sent}}, "observation": sent}
            return 200, {"output": f"You sent {sent}; {text}", "intermediateSteps": [step]}
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
                status, answer = fake.answer(path, body, dict(self.headers))
                _send_json(self, status, answer)

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


class FakeN8nApi(_FakeServer):
    """A test double of the part of n8n's public API datasets read (not n8n itself).

    Workflows by id, their saved versions (``versions``: version id → workflow, as n8n's
    history keeps them; a pruned one is left out), executions newest first in pages
    (``limit``, ``nextCursor``, ``status``, ``startedAfter``), and Data Tables with rows.
    ``pages_served`` counts the execution pages, so a test can check that pagination was
    followed to the end; ``versions_served`` counts the versions read. ``refuse_key``: every
    call is refused with HTTP 401 quoting the key it was sent (as some proxies do).
    """

    def __init__(self) -> None:
        self.workflows: dict[str, dict[str, Any]] = {}
        self.versions: dict[str, dict[str, Any]] = {}
        self.versions_served = 0
        self.executions: list[dict[str, Any]] = []  # oldest first, as n8n numbers them
        self.tables: dict[str, dict[str, Any]] = {}
        self.pages_served = 0
        self.refuse_key = False
        super().__init__()

    def list_executions(self, query: dict[str, str]) -> dict[str, Any]:
        self.pages_served += 1
        found = [
            execution
            for execution in reversed(self.executions)
            if execution["workflowId"] == query.get("workflowId")
            and query.get("status") in (None, execution["status"])
            and execution["startedAt"] > query.get("startedAfter", "")
        ]
        start, limit = int(query.get("cursor", "0")), int(query["limit"])
        page = found[start : start + limit]
        more = start + limit < len(found)
        if query.get("includeData") != "true":
            page = [{k: v for k, v in e.items() if k != "data"} for e in page]
        return {"data": page, "nextCursor": str(start + limit) if more else None}

    @staticmethod
    def upsert(rows: list[dict[str, Any]], body: dict[str, Any]) -> int:
        """n8n's upsert: the rows equal to the filter's values updated, else one added."""
        wanted = {f["columnName"]: f["value"] for f in body["filter"]["filters"]}
        matching = [row for row in rows if all(row.get(k) == v for k, v in wanted.items())]
        for row in matching:
            row.update(body["data"])
        if not matching:
            rows.append({"id": len(rows) + 1, **body["data"]})
        return 1

    def answer(self, method: str, path: str, query: dict[str, str], body: Any) -> Any:
        parts = path.removeprefix("/api/v1/").split("/")
        if parts == ["executions"]:
            return self.list_executions(query)
        if parts[0] == "executions" and len(parts) == 2:
            by_id = {str(execution["id"]): execution for execution in self.executions}
            return by_id[parts[1]]
        if parts[0] == "workflows" and len(parts) == 2:
            return self.workflows[parts[1]]
        if parts[0] == "workflows" and parts[2:3] == ["versions"]:
            self.versions_served += 1
            return self.versions[parts[3]]
        if parts == ["data-tables"] and method == "GET":
            return {"data": [t["meta"] for t in self.tables.values()], "nextCursor": None}
        if parts == ["data-tables"]:
            table_id = f"t{len(self.tables) + 1}"
            meta = {"id": table_id, "name": body["name"], "columns": body["columns"]}
            self.tables[table_id] = {"meta": meta, "rows": []}
            return meta
        rows = self.tables[parts[1]]["rows"]
        if method == "GET":
            return {"data": rows, "nextCursor": None}
        if parts[-1] == "upsert":
            return self.upsert(rows, body)
        rows.extend({"id": len(rows) + 1, **row} for row in body["data"])
        return len(body["data"])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _respond(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                key = self.headers.get("X-N8N-API-KEY", "")
                if fake.refuse_key:
                    _send_json(self, 401, {"message": f"unauthorized: API key {key} is invalid"})
                    return
                try:
                    status, answer = 200, fake.answer(method, parts.path, query, body)
                except KeyError:
                    status, answer = 404, {"message": "Not Found"}
                _send_json(self, status, answer)

            def do_GET(self) -> None:
                self._respond("GET")

            def do_POST(self) -> None:
                self._respond("POST")

            def log_message(self, *_: Any) -> None:
                pass

        return Handler


# A harness copy's answer to one call: (HTTP status, JSON), from the copy and the body.
CopyAgent = Callable[[dict[str, Any], Any], tuple[int, Any]]


class FakeN8nHarness(_FakeServer):
    """A test double of the n8n a harness copy runs in (not n8n itself).

    The public API's workflow calls a run makes (create, publish, list, read, unpublish,
    archive, delete; executions, none stored) and the webhooks of the published copies:
    each call of a copy's webhook is answered by ``agent(copy, body)``, so that the answer
    can depend on the copy's nodes (a variant's parameters, the version's system message).
    ``created`` keeps every copy made; ``calls`` counts the webhook calls by copy name.
    """

    def __init__(self, agent: CopyAgent) -> None:
        self.agent = agent
        self.workflows: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.published: dict[str, str] = {}  # webhook path → workflow id
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        super().__init__()

    @staticmethod
    def _path_of(workflow: dict[str, Any]) -> str | None:
        return next(
            (
                str(node["parameters"]["path"])
                for node in workflow.get("nodes", [])
                if node.get("type") == "n8n-nodes-base.webhook"
            ),
            None,
        )

    def api(self, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
        if parts == ["workflows"] and method == "POST":
            with self._lock:
                workflow_id = f"copy-{len(self.created) + 1}"
                self.created.append(body)
                self.workflows[workflow_id] = {**body, "id": workflow_id, "active": False}
            return 200, self.workflows[workflow_id]
        if parts == ["workflows"]:
            listed = [{"id": key, "name": w["name"]} for key, w in self.workflows.items()]
            return 200, {"data": listed, "nextCursor": None}
        if parts == ["executions"]:
            return 200, {"data": [], "nextCursor": None}
        if parts[0] != "workflows" or parts[1] not in self.workflows:
            return 404, {"message": "Not Found"}
        workflow_id, step = parts[1], parts[2] if len(parts) > 2 else ""
        workflow = self.workflows[workflow_id]
        if step == "publish":
            self.published[self._path_of(workflow) or ""] = workflow_id
        elif step == "unpublish":
            self.published = {p: w for p, w in self.published.items() if w != workflow_id}
        elif method == "DELETE":
            del self.workflows[workflow_id]
        return 200, workflow

    def other(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """A path that is neither the API nor a webhook (none, unless a subclass has one)."""
        return 404, {"message": "Not Found"}

    def webhook(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        workflow_id = self.published.get(path.removeprefix("/webhook/"))
        if workflow_id is None:
            return 404, {"message": f"The requested webhook {path} is not registered."}
        if method == "GET":
            return 404, {"message": f"This webhook is not registered for GET: {path}"}
        copy = self.workflows[workflow_id]
        self.calls[copy["name"]] += 1
        return self.agent(copy, body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _respond(self, method: str) -> None:
                path = urlsplit(self.path).path
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                if path.startswith("/api/v1/"):
                    parts = path.removeprefix("/api/v1/").split("/")
                    status, answer = fake.api(method, parts, body)
                elif path.startswith("/webhook/"):
                    status, answer = fake.webhook(method, path, body or {})
                else:
                    status, answer = fake.other(method, path, body)
                _send_json(self, status, answer)

            def do_GET(self) -> None:
                self._respond("GET")

            def do_POST(self) -> None:
                self._respond("POST")

            def do_DELETE(self) -> None:
                self._respond("DELETE")

            def log_message(self, *_: Any) -> None:
                pass

        return Handler
