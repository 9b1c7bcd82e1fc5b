"""The reports folder served read-only on 127.0.0.1 while the UI runs, for its report links.

A browser does not follow a ``file://`` link from an ``http://`` page, so the Dagster UI's
``report_url`` is an address this server answers (``settings.report_url``): files only,
no folder listing, nothing outside the folder, nothing written.
"""

from __future__ import annotations

import functools
import threading
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from typing import Any


class _ReportFiles(SimpleHTTPRequestHandler):
    """GET and HEAD of the folder's files; a folder is not listed."""

    def list_directory(self, path: str | PathLike[str]) -> None:
        self.send_error(HTTPStatus.NOT_FOUND, "no such report")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the UI's terminal is Dagster's: a line per request would bury it


class ReportServer:
    """``folder`` served on ``host:port`` from a thread of this process, as a context."""

    def __init__(self, folder: Path, host: str, port: int) -> None:
        handler = functools.partial(_ReportFiles, directory=str(folder))
        self._server = ThreadingHTTPServer((host, port), handler)  # raises OSError if taken
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The address the folder's root answers at."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def __enter__(self) -> ReportServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
