"""The results workspace as the commands serve it, and the review page opened in it.

Served with the profile's label store, on the reports port, in the foreground.

The workspace reads results and never writes them; its review page writes people's labels
through the label store the runs and the labels commands use (DuckDB here, the results'
PostgreSQL under the distributed profiles), handed to it here because only the commands
may reach the Dagster wing that keeps it.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import click

from n8n_deepeval_pipeline import settings

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from n8n_deepeval_pipeline.benchmark.config import Benchmark
    from n8n_deepeval_pipeline.calibration.label_store import LabelStore
    from n8n_deepeval_pipeline.workspace import WorkspaceServer

_PROBE_S = 3.0  # how long a workspace already on the port has to say what it reads


def label_store_of(benchmark: Benchmark) -> LabelStore:
    """The profile's label store of a benchmark: where runs and the labels commands keep labels."""
    from n8n_deepeval_pipeline.orchestration.resources.human_labels import label_store

    url = settings.postgres_url() if settings.profile() != "local" else None
    return label_store(benchmark, str(settings.database_path()), url)


def workspace_app(files: list[Path] | None = None) -> Starlette:
    """The workspace on the profile's store, its review page writing labels.

    ``files``: the benchmark files it knows (default: the ones ``ui`` loads).
    """
    from n8n_deepeval_pipeline.workspace import create_app
    from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles

    return create_app(benchmark_files=BenchmarkFiles(files), label_stores=label_store_of)


def stop_on_signals(server: WorkspaceServer) -> None:
    """Have SIGINT and SIGTERM stop the server, from now on (before it serves too)."""
    # uvicorn handles SIGINT and SIGTERM while it serves, then raises the signal again under
    # the handler it found: this one, which stops the server (a signal before uvicorn took
    # over too) and lets a stop exit 0, as `ui` does; a background job's ignored SIGINT
    # stops it as well.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda _signum, _frame: server.stop())


def serve_in_foreground(server: WorkspaceServer) -> None:
    """Serve until SIGINT or SIGTERM, then return (the command exits 0)."""
    stop_on_signals(server)
    server.serve()


def review_path(benchmark: str, reviewer: str) -> str:
    """The review page's path, naming the reviewer its queue was prepared for."""
    return f"benchmarks/{quote(benchmark, safe='')}/review?reviewer={quote(reviewer, safe='')}"


def _serves_this_store(root: str) -> bool:
    """Whether the workspace answering at ``root`` reads the store this command wrote to."""
    from n8n_deepeval_pipeline.workspace.store import StoreSource

    try:
        with urllib.request.urlopen(root + "workspace.json", timeout=_PROBE_S) as answer:
            said = json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError):
        return False
    return isinstance(said, dict) and said.get("store") == StoreSource.configured().described


def open_review_page(file: Path, benchmark: str, reviewer: str, browser: bool) -> None:
    """The review page of ``reviewer``'s queue, served from here until stopped.

    When a workspace serving this store already answers on the reports port, that one
    shows it and this command returns.
    """
    from n8n_deepeval_pipeline.workspace import WorkspaceServer

    port = settings.reports_port()
    try:
        server = WorkspaceServer(workspace_app([file]), settings.REPORTS_HOST, port)
    except OSError as error:
        root = f"http://{settings.REPORTS_HOST}:{port}/"
        if not _serves_this_store(root):
            raise click.ClickException(
                f"{settings.REPORTS_HOST}:{port}: {_said(error)}, and what answers "
                f"there is not the results workspace of this store: stop it, or move the "
                f"workspace with {settings.REPORTS_PORT_ENV}"
            ) from None
        _show(root + review_path(benchmark, reviewer), browser, "the workspace already running")
        return
    stop_on_signals(server)  # stopped as soon as the address is out, it exits 0
    click.echo(f"results workspace at {server.url} (Ctrl-C stops it)", err=True)
    _show(server.url + review_path(benchmark, reviewer), browser, "this command")
    server.serve()


def _said(error: OSError) -> str:
    """The error's own words (socket errors add the address, said already)."""
    return os.strerror(error.errno) if error.errno else str(error)


def _show(page: str, browser: bool, served_by: str) -> None:
    click.echo(f"review page: {page} (served by {served_by})")
    if browser:
        webbrowser.open(page)
