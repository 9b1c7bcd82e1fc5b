"""The workspace served by uvicorn: beside the Dagster UI from a thread, or alone.

The socket is bound before the server starts, so that a taken port is said at once
(``OSError``) rather than in uvicorn's log after the UI has started.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import uvicorn
from starlette.applications import Starlette

_EVERY_INTERFACE = ("0.0.0.0", "::")


class WorkspaceServer:
    """``app`` on ``host:port``; a context that serves it from a thread of this process."""

    def __init__(self, app: Starlette, host: str, port: int) -> None:
        self._socket = socket.create_server((host, port), reuse_port=False)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.serve, daemon=True, name="workspace")

    @property
    def url(self) -> str:
        """The address the workspace's home page answers at."""
        host, port = self._socket.getsockname()[:2]
        if host in _EVERY_INTERFACE:  # reached from other machines by this one's name
            host = socket.getfqdn()
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}/"

    def serve(self) -> None:
        """Serve until stopped (in the main thread, uvicorn handles SIGINT and SIGTERM)."""
        self._server.run(sockets=[self._socket])

    def stop(self) -> None:
        """Have the server stop serving (it finishes the requests under way)."""
        self._server.should_exit = True

    def __enter__(self) -> WorkspaceServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()
        self._thread.join(timeout=5)
        self._socket.close()
