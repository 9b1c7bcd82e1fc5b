"""Loopback stand-ins of GitHub's and GitLab's REST APIs (test doubles, not the forges).

Each keeps one review thread's comments in memory, answers the calls the sticky comment
makes (list with pages, create, edit), and records every request with its headers, so a
test can read back what a CI job did to the thread and with which token.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.n8n_api.fake_n8n import _FakeServer, _send_json


class _ForgeStandIn(_FakeServer):
    """A thread of comments served on 127.0.0.1; subclasses map the forge's paths."""

    page_size_cap = 100

    def __init__(self, token: str) -> None:
        self.token = token
        self.comments: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        super().__init__()

    def authorised(self, headers: Any) -> bool:
        raise NotImplementedError

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        raise NotImplementedError

    def _add(self, body: str, **extra: Any) -> dict[str, Any]:
        self._next_id += 1
        comment = {"id": self._next_id, "body": body, **extra}
        self.comments.append(comment)
        return comment

    def _page(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        size = min(int(query.get("per_page", ["30"])[0]), self.page_size_cap)
        page = int(query.get("page", ["1"])[0])
        return self.comments[(page - 1) * size : page * size]

    def _find(self, comment_id: int) -> dict[str, Any] | None:
        return next((c for c in self.comments if c["id"] == comment_id), None)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                parts = urlsplit(self.path)
                with standin._lock:
                    standin.requests.append(
                        {
                            "method": self.command,
                            "path": parts.path,
                            "query": parts.query,
                            "headers": dict(self.headers),
                            "body": body,
                        }
                    )
                    if not standin.authorised(self.headers):
                        status, answer = 401, {"message": "Bad credentials"}
                    else:
                        found = standin.route(self.command, parts.path, parse_qs(parts.query), body)
                        status, answer = (404, {"message": "Not Found"}) if found is None else found
                _send_json(self, status, answer)

            do_GET = do_POST = do_PATCH = do_PUT = _serve

            def log_message(self, *_: object) -> None:
                pass

        return Handler


class GitHubStandIn(_ForgeStandIn):
    """GitHub's issue comments of one pull request: ``/repos/{repo}/issues/{n}/comments``."""

    def __init__(self, token: str, repository: str, number: int) -> None:
        super().__init__(token)
        self.thread = f"/repos/{repository}/issues/{number}/comments"
        self.edit = re.compile(rf"^/repos/{re.escape(repository)}/issues/comments/(\d+)$")

    def authorised(self, headers: Any) -> bool:
        return headers.get("Authorization") == f"Bearer {self.token}"

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        if path == self.thread and method == "GET":
            return 200, self._page(query)
        if path == self.thread and method == "POST":
            return 201, self._add(body["body"])
        edited = self.edit.match(path)
        if edited and method == "PATCH":
            comment = self._find(int(edited.group(1)))
            if comment is None:
                return None
            comment["body"] = body["body"]
            return 200, comment
        return None


class GitLabStandIn(_ForgeStandIn):
    """GitLab's notes of one merge request: ``/projects/{id}/merge_requests/{iid}/notes``."""

    def __init__(self, token: str, project: str, iid: int) -> None:
        super().__init__(token)
        self.thread = f"/api/v4/projects/{project}/merge_requests/{iid}/notes"

    def authorised(self, headers: Any) -> bool:
        return headers.get("PRIVATE-TOKEN") == self.token

    def add_system_note(self, body: str) -> None:
        """A note GitLab writes itself ("added 1 commit"), never the job's."""
        self._add(body, system=True)

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        if path == self.thread and method == "GET":
            return 200, self._page(query)
        if path == self.thread and method == "POST":
            return 201, self._add(body["body"], system=False)
        if path.startswith(f"{self.thread}/") and method == "PUT":
            comment = self._find(int(path.rsplit("/", 1)[1]))
            if comment is None:
                return None
            comment["body"] = body["body"]
            return 200, comment
        return None
