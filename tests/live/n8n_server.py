"""A real n8n server on loopback for live tests.

`scripts/install_n8n.sh` installs n8n and the Node 24 it needs into a cache folder;
`N8nServer.start()` runs it with a private user folder, creates the owner and an API key,
and offers small helpers for the public API and for webhooks::

    @pytest.fixture(scope="session")
    def n8n(tmp_path_factory: pytest.TempPathFactory) -> Iterator[N8nServer]:
        work_dir = tmp_path_factory.mktemp("n8n")
        with N8nServer.start(ensure_installed(), work_dir) as server:
            yield server

    def test_echo(n8n: N8nServer) -> None:
        workflow_id = n8n.create_workflow(load_workflow("agent_echo"))
        answer = n8n.wait_for_webhook("agent-echo", body={"input": "What is 6*7?"}).json()
        assert answer["output"] == "The answer is 42."
        n8n.delete_workflow(workflow_id)

The HTTP client is `httpx2`, the one already installed with the project (through openai).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

import httpx2

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install_n8n.sh"
WORKFLOWS_DIR = Path(__file__).resolve().parent / "workflows"

OWNER_EMAIL = "owner@example.com"
# n8n wants 8-64 characters with at least one digit and one capital letter.
OWNER_PASSWORD = "LiveTest-Passw0rd"
# Fixed so that a work_dir can be reused by a later start (credentials stay decryptable).
ENCRYPTION_KEY = "n8n-deepeval-live-tests-encryption-key"
# The REST API binds the login cookie to this header; every /rest call must repeat it.
BROWSER_ID = "n8n-deepeval-live-tests"

# Fields the public API accepts when creating or updating a workflow (others give 400).
WRITABLE_WORKFLOW_FIELDS = (
    "name",
    "description",
    "nodes",
    "connections",
    "nodeGroups",
    "settings",
    "staticData",
    "pinData",
)
# n8n's 409 while a deactivation is still being processed in the background.
RETRYABLE_DELETE = "try again in a few moments"


def ensure_installed(script: Path = INSTALL_SCRIPT) -> Path:
    """Run the installer (a no-op once installed) and return the install folder."""
    done = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


def load_workflow(name: str) -> dict[str, Any]:
    """Read `tests/live/workflows/<name>.json`."""
    data: dict[str, Any] = json.loads((WORKFLOWS_DIR / f"{name}.json").read_text("utf-8"))
    return data


def encode_query(params: Mapping[str, Any] | None) -> str:
    """A query string with every reserved character percent-encoded (or "" for no params).

    n8n's request validator rejects a JSON `filter` that holds a raw reserved character,
    and httpx2's own encoding leaves some in (a space becomes "+"), so the query is built here.
    """
    if not params:
        return ""
    pairs = (
        f"{quote(key, safe='')}={quote(_query_text(value), safe='')}"
        for key, value in params.items()
    )
    return "?" + "&".join(pairs)


def _query_text(value: Any) -> str:
    """One query value as text: JSON for dicts and lists, true/false for booleans."""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server_env(work_dir: Path, port: int, broker_port: int, node_bin: Path) -> dict[str, str]:
    """The environment for n8n: loopback only, private state, nothing phoned home."""
    # Drop the caller's n8n settings so a developer's own setup cannot leak in.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("N8N_", "DB_", "EXECUTIONS_", "QUEUE_", "WEBHOOK_URL"))
    }
    env.update(
        {
            # Node 24 first, for anything n8n starts by name (the task runner uses execPath).
            "PATH": f"{node_bin}{os.pathsep}{env.get('PATH', '')}",
            "N8N_USER_FOLDER": str(work_dir),
            "N8N_LISTEN_ADDRESS": "127.0.0.1",
            "N8N_PORT": str(port),
            "N8N_HOST": "127.0.0.1",
            "N8N_PROTOCOL": "http",
            # n8n 2.x name of WEBHOOK_URL (that one still works but logs a deprecation).
            "N8N_WEBHOOK_URL": f"http://127.0.0.1:{port}/",
            "N8N_EDITOR_BASE_URL": f"http://127.0.0.1:{port}/",
            "DB_TYPE": "sqlite",
            "N8N_ENCRYPTION_KEY": ENCRYPTION_KEY,
            "N8N_SECURE_COOKIE": "false",  # the login cookie must travel over plain http
            "N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false",
            "N8N_RUNNERS_MODE": "internal",
            "N8N_RUNNERS_BROKER_LISTEN_ADDRESS": "127.0.0.1",
            "N8N_RUNNERS_BROKER_PORT": str(broker_port),
            "N8N_RUNNERS_TASK_TIMEOUT": "120",  # explicit: the default is about to change
            # No Python in the Code node (n8n still logs that the Python runner is missing).
            "N8N_PYTHON_ENABLED": "false",
            "GENERIC_TIMEZONE": "UTC",
            "TZ": "UTC",
            "N8N_LOG_LEVEL": "info",
            "N8N_LOG_OUTPUT": "console",
            "N8N_GRACEFUL_SHUTDOWN_TIMEOUT": "5",  # stop() waits less than n8n's default 30 s
            # Nothing may leave the machine. mcp-registry fetches api.n8n.io at start (seen);
            # the rest are n8n's documented switches for an isolated instance.
            "N8N_DISABLED_MODULES": "mcp-registry",
            "N8N_DIAGNOSTICS_ENABLED": "false",
            "N8N_DIAGNOSTICS_CONFIG_FRONTEND": "",
            "N8N_DIAGNOSTICS_CONFIG_BACKEND": "",
            "EXTERNAL_FRONTEND_HOOKS_URLS": "",
            "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
            "N8N_VERSION_NOTIFICATIONS_WHATS_NEW_ENABLED": "false",
            "N8N_DYNAMIC_BANNERS_ENABLED": "false",
            "N8N_PERSONALIZATION_ENABLED": "false",
            "N8N_TEMPLATES_ENABLED": "false",
            "N8N_HIRING_BANNER_ENABLED": "false",
            "N8N_AI_ENABLED": "false",
            "N8N_PUBLIC_API_SWAGGERUI_DISABLED": "true",
            "N8N_COMMUNITY_PACKAGES_ENABLED": "false",
            "N8N_UNVERIFIED_PACKAGES_ENABLED": "false",
            # Set explicitly only to keep the start-up deprecation notice short.
            "N8N_COMPRESSION_NODE_MAX_DECOMPRESSED_SIZE_BYTES": str(256 * 1024 * 1024),
            "N8N_COMPRESSION_NODE_MAX_ZIP_ENTRIES": "1000",
        }
    )
    return env


class N8nServer:
    """One n8n process (and its task runner) in its own process group."""

    def __init__(self, process: subprocess.Popen[bytes], base_url: str, log_path: Path) -> None:
        """Wrap a started process; use `N8nServer.start()` rather than this."""
        self.process = process
        self.base_url = base_url
        self.log_path = log_path
        self.api_key = ""
        self._stopped = False
        self._rest = httpx2.Client(
            base_url=f"{base_url}/rest", headers={"browser-id": BROWSER_ID}, timeout=30.0
        )
        self._public: httpx2.Client | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    @classmethod
    def start(cls, install_dir: Path, work_dir: Path, *, timeout_s: float = 180.0) -> N8nServer:
        """Start n8n on free loopback ports, wait until ready, set up the owner and API key."""
        work_dir.mkdir(parents=True, exist_ok=True)
        node_bin = install_dir / "node24" / "bin"
        port, broker_port = free_port(), free_port()
        log_path = work_dir / "n8n.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [str(node_bin / "node"), str(install_dir / "node_modules/n8n/bin/n8n"), "start"],
                cwd=work_dir,
                env=server_env(work_dir, port, broker_port, node_bin),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() reaches the task runner too
            )
        server = cls(process, f"http://127.0.0.1:{port}", log_path)
        atexit.register(server.stop)  # no n8n left behind if the caller never stops it
        try:
            server.wait_ready(timeout_s)
            server.setup_owner()
        except BaseException:
            server.stop()
            raise
        return server

    def wait_ready(self, timeout_s: float) -> None:
        """Poll `/healthz/readiness` until n8n has its database migrated and serves requests."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"n8n exited with {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{self.base_url}/healthz/readiness", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.25)
        raise TimeoutError(f"n8n not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after `grace_s`. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._rest.close()
        if self._public is not None:
            self._public.close()
        group = self.process.pid  # == the group id, thanks to start_new_session
        _signal_group(group, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(group, signal.SIGKILL)
            self.process.wait()
        # The task runner may outlive a main process that exited on its own.
        _signal_group(group, signal.SIGKILL)

    def __enter__(self) -> Self:
        """Use the server in a `with` block; it is stopped on the way out."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of n8n's log, for error messages."""
        text = self.log_path.read_text("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    # ---- owner and API key -----------------------------------------------------------------

    def setup_owner(self) -> None:
        """Create the owner (no browser needed), log in and create an API key with all scopes."""
        owner = {"email": OWNER_EMAIL, "firstName": "Live", "lastName": "Test"}
        _check(self._rest.post("/owner/setup", json={**owner, "password": OWNER_PASSWORD}))
        login = {"emailOrLdapLoginId": OWNER_EMAIL, "password": OWNER_PASSWORD}
        _check(self._rest.post("/login", json=login))  # keeps the n8n-auth cookie
        scopes = _data(_check(self._rest.get("/api-keys/scopes")))
        body = {"label": "live tests", "scopes": scopes, "expiresAt": None}
        self.api_key = _data(_check(self._rest.post("/api-keys", json=body)))["rawApiKey"]
        self._public = httpx2.Client(
            base_url=f"{self.base_url}/api/v1",
            headers={"X-N8N-API-KEY": self.api_key},
            timeout=30.0,
        )

    def rest(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        """Call the internal REST API (`/rest/...`) as the logged-in owner.

        Keep the `browser-id` header: on a mismatch n8n answers 401 and clears the login cookie.
        """
        return self._rest.request(method, path, **kwargs)

    # ---- public API --------------------------------------------------------------------------

    def api(
        self, method: str, path: str, params: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> httpx2.Response:
        """Call the public API, e.g. `api("GET", "/workflows")`; the status is not checked.

        `params` values that are dicts or lists are sent as JSON (n8n's `filter`).
        """
        if self._public is None:
            raise RuntimeError("the owner and API key are not set up")
        return self._public.request(method, path + encode_query(params), **kwargs)

    def openai_credential(self, name: str, base_url: str) -> str:
        """Create an `openAiApi` credential whose model calls go to ``base_url``; its id."""
        data = {"apiKey": "sk-fake", "url": base_url}
        body = {"name": name, "type": "openAiApi", "data": data}
        credential_id: str = _check(self.api("POST", "/credentials", json=body)).json()["id"]
        return credential_id

    def chat_agent(self, credential_id: str) -> dict[str, Any]:
        """The bundled chat agent workflow, its model wired to ``credential_id``."""
        text = json.dumps(load_workflow("chat_agent"))
        workflow: dict[str, Any] = json.loads(
            text.replace("__OPENAI_CREDENTIAL_ID__", credential_id)
        )
        return workflow

    def create_workflow(self, workflow: dict[str, Any], activate: bool = True) -> str:
        """Create a workflow from an export-like dict (extra fields dropped); return its id."""
        body = {key: workflow[key] for key in WRITABLE_WORKFLOW_FIELDS if key in workflow}
        body.setdefault("settings", {"executionOrder": "v1"})  # required by the API
        workflow_id: str = _check(self.api("POST", "/workflows", json=body)).json()["id"]
        if activate:
            self.activate_workflow(workflow_id)
        return workflow_id

    def activate_workflow(self, workflow_id: str) -> None:
        """Publish the current version ("activate" in n8n 1.x; that route is a deprecated alias)."""
        _check(self.api("POST", f"/workflows/{workflow_id}/publish"))

    def delete_workflow(self, workflow_id: str, timeout_s: float = 30.0) -> None:
        """Deactivate, archive and delete a workflow; a missing workflow is not an error."""
        for step in ("unpublish", "archive"):
            response = self.api("POST", f"/workflows/{workflow_id}/{step}")
            if response.status_code == 404:
                return
            _check(response)
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.api("DELETE", f"/workflows/{workflow_id}")
            if response.status_code == 404:
                return
            # The unpublish finishes in the background; until then DELETE answers 409.
            retry = response.status_code == 409 and RETRYABLE_DELETE in response.text
            if not retry or time.monotonic() > deadline:
                _check(response)
                return
            time.sleep(0.25)

    # ---- webhooks ----------------------------------------------------------------------------

    def webhook_url(self, path: str) -> str:
        """The production URL of a webhook path."""
        return f"{self.base_url}/webhook/{path.lstrip('/')}"

    def call_webhook(
        self, path: str, body: Any = None, method: str = "POST", timeout_s: float = 30.0
    ) -> httpx2.Response:
        """Send one request to a production webhook (JSON body, if any)."""
        json_body = {} if body is None else {"json": body}
        return httpx2.request(method, self.webhook_url(path), timeout=timeout_s, **json_body)

    def wait_for_webhook(
        self, path: str, method: str = "POST", body: Any = None, timeout_s: float = 30.0
    ) -> httpx2.Response:
        """Call the webhook until it answers something else than 404; return that answer.

        Publishing returns before the webhook is served: for a moment n8n still answers 404
        ("Published version not found"). The answering call is a real execution (a 404 runs
        nothing), so its response can stand for the first turn of a conversation. There is
        no side-effect-free probe: OPTIONS answers 204 (or 500) whether registered or not.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.call_webhook(path, body, method)
            if response.status_code != 404:
                return response
            if time.monotonic() > deadline:
                raise TimeoutError(f"webhook {path!r} still 404 after {timeout_s:.0f} s")
            time.sleep(0.2)


def _signal_group(group: int, sig: signal.Signals) -> None:
    """Signal a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _check(response: httpx2.Response) -> httpx2.Response:
    """Raise with n8n's error message (httpx2's own error omits the body)."""
    if response.is_error:
        raise RuntimeError(
            f"{response.request.method} {response.request.url} -> "
            f"{response.status_code}: {response.text[:500]}"
        )
    return response


def _data(response: httpx2.Response) -> Any:
    """The payload of a `/rest` answer, which n8n wraps as `{"data": ...}`."""
    payload = response.json()
    return payload["data"] if isinstance(payload, dict) and "data" in payload else payload
