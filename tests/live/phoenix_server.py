"""Arize Phoenix on loopback: a real OpenTelemetry receiver whose API reads spans back.

Installed in a virtual environment of its own by scripts/install_phoenix.sh (its pins are
not the project's); started as a server process in a session of its own, with its data
in a folder of the test's, and stopped by process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2

from tests.live.n8n_server import free_port

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = ROOT / "scripts" / "install_phoenix.sh"
START_TIMEOUT_S = 180.0


def ensure_phoenix() -> Path:
    """Run the installer (a no-op once installed) and return the install folder."""
    done = subprocess.run(["bash", str(INSTALL_SCRIPT)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


class Phoenix:
    """A started Phoenix: its base URL, and its spans read back through its REST API."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def project_id(self, name: str = "default") -> str:
        """The id Phoenix's pages name the project by."""
        answer = httpx2.get(f"{self.base_url}/v1/projects", timeout=30)
        answer.raise_for_status()
        return str(next(p["id"] for p in answer.json()["data"] if p["name"] == name))

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of ``project``, page by page."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000}
            if cursor:
                params["cursor"] = cursor
            answer = httpx2.get(
                f"{self.base_url}/v1/projects/{project}/spans", params=params, timeout=30
            )
            answer.raise_for_status()
            page = answer.json()
            found += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def wait_for_trace(self, timeout_s: float = 120.0) -> list[dict[str, Any]]:
        """The spans of the one trace sent, once Phoenix has stored them all.

        Phoenix stores what it receives in the background; the root span says how many
        the trace holds (``n8n_deepeval.trace.spans``).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.spans()
            roots = [span for span in found if span["parent_id"] is None]
            whole = roots and len(found) >= roots[0]["attributes"]["n8n_deepeval.trace.spans"]
            if whole or time.monotonic() > deadline:
                return found
            time.sleep(0.5)


@contextmanager
def phoenix_server(install_dir: Path, data_dir: Path) -> Iterator[Phoenix]:
    """Phoenix serving on 127.0.0.1 until the block ends (telemetry off, data in data_dir)."""
    port = free_port()
    environ = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(data_dir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (data_dir / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(install_dir / "bin" / "phoenix"), "serve"],
        env=environ,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(process, base_url, data_dir / "phoenix.log")
        yield Phoenix(base_url)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def _wait_until_serving(process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Phoenix exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx2.get(f"{base_url}/v1/projects", timeout=2).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.25)
    raise RuntimeError(
        f"Phoenix did not serve within {START_TIMEOUT_S:g} s: {log.read_text()[-2000:]}"
    )
