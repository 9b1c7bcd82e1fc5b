"""`ui`: the Dagster UI and daemon as one process group, beside the results workspace."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import EXIT_INVALID_CONFIG, Refused, exit_codes_stated

if TYPE_CHECKING:
    from n8n_deepeval_pipeline.workspace import WorkspaceServer

_LOOPBACK = "127.0.0.1"
_PORTS_TO_TRY = 100
# Dagster 1.13 marks `dagster dev` superseded by `dg dev` (dagster-dg-cli, which runs dg
# projects: pyproject [tool.dg] and a defs/ folder) and says so at every start. A code
# location named by module is what `dagster dev -m` is for; only that one warning is
# left out, by its text, in the `dagster dev` process alone: any other still shows.
_SUPERSEDED_WARNING = "ignore:Function `dev_command` is superseded:FutureWarning"


def _free_port(host: str, first: int) -> int:
    """The first port from ``first`` up that nothing listens on (on ``host``).

    Only a port in use is skipped: any other refusal (a port below 1024 without root)
    would refuse the next ports too, so it is said as it is.
    """
    last = min(first + _PORTS_TO_TRY, 65536) - 1
    for port in range(first, last + 1):
        with socket.socket() as probe:
            # As the webserver binds: a port left in TIME_WAIT counts as free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    continue
                reason = error.strerror or str(error)
                raise click.ClickException(f"cannot listen on {host}:{port}: {reason}") from None
            return port
    raise click.ClickException(f"no free port on {host} from {first} to {last}")


def _named_benchmarks(files: tuple[Path, ...]) -> list[Path]:
    """The benchmark files the UI loads: the ones named, else the default ones, all checked.

    Each is loaded as the code location will load it: a file that does not validate, or
    two that share a name, would leave the UI serving a broken code location, so nothing
    is started. Named files are handed to Dagster's processes in ``$N8N_DEEPEVAL_BENCHMARKS``.
    """
    from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
    from n8n_deepeval_pipeline.orchestration.definitions import loaded_benchmarks

    found = settings.discover_benchmark_files(list(files) or settings.benchmark_paths())
    try:
        loaded_benchmarks(found)
    except (BenchmarkConfigError, ValueError) as error:  # ValueError: a name used twice
        raise Refused(str(error), EXIT_INVALID_CONFIG) from None
    if files:
        os.environ[settings.BENCHMARKS_ENV] = os.pathsep.join(str(f.resolve()) for f in files)
    return found


def _workspace(host: str) -> WorkspaceServer:
    """The results workspace on ``host`` at the port its links name; OSError when taken."""
    from n8n_deepeval_pipeline.console.workspace_serving import workspace_app
    from n8n_deepeval_pipeline.workspace import WorkspaceServer

    return WorkspaceServer(workspace_app(), host, settings.reports_port())


def _not_served(host: str, error: OSError) -> str:
    return (
        f"the results workspace is not served: {host}:{settings.reports_port()}: "
        f"{error.strerror or error} (the links of the reports and the Dagster UI point there; "
        f"{settings.REPORTS_PORT_ENV} moves them)"
    )


def _workspace_beside_the_ui(host: str) -> AbstractContextManager[object]:
    """The workspace served from a thread while the UI runs, if its port is free."""
    try:
        server = _workspace(host)
    except OSError as error:
        click.echo(_not_served(host, error), err=True)
        return contextlib.nullcontext()
    click.echo(f"results workspace at {server.url}", err=True)
    return server


@exit_codes_stated("ui")
@click.command()
@click.argument("files", nargs=-1, type=benchmarks.EXISTING_FILE)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=3000,
    show_default=True,
    help="The Dagster UI's port; when it is taken, the next free one.",
)
@click.option(
    "--host",
    default=_LOOPBACK,
    show_default=True,
    help="The address both are served on: another (0.0.0.0) shares them on a team's network, "
    "where $N8N_DEEPEVAL_WORKSPACE_URL gives the links the workspace's address.",
)
@click.option(
    "--results-only",
    is_flag=True,
    help="Serve the results workspace alone, without the Dagster UI and daemon.",
)
def ui(files: tuple[Path, ...], port: int, host: str, results_only: bool) -> None:
    """Start the Dagster UI and daemon, and the results workspace beside them.

    Both use the CLI's instance and results store; the workspace answers at
    $N8N_DEEPEVAL_REPORTS_PORT (default 3001), shows every benchmark's versions, cases
    and runs, and serves the reports the assets' links name. It loads the benchmark FILES
    named, or else every benchmark file under $N8N_DEEPEVAL_BENCHMARKS (default
    ./benchmarks and the bundled examples).
    """
    loaded = _named_benchmarks(files)
    if results_only:
        _results_only(host, loaded)
        return
    from n8n_deepeval_pipeline.orchestration.code_location import DEFINITIONS_MODULE
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    with local_instance() as instance:  # created here, so that Dagster's processes find it made
        home = instance.root_directory
    click.echo(f"Dagster instance {home} · database {settings.database_path()}", err=True)
    click.echo("benchmarks: " + (", ".join(str(path) for path in loaded) or "none found"), err=True)
    with _workspace_beside_the_ui(host):
        chosen = _free_port(host, port)
        taken = f" ({port} is taken)" if chosen != port else ""
        click.echo(f"Dagster UI at http://{host}:{chosen}{taken}", err=True)
        command = [
            sys.executable,
            "-W",
            _SUPERSEDED_WARNING,
            "-m",
            "dagster",
            "dev",
            "-h",
            host,
            "-p",
            str(chosen),
            "-m",
            DEFINITIONS_MODULE,
        ]
        code = _serve(command)
    sys.exit(code)


def _results_only(host: str, loaded: list[Path]) -> None:
    """The workspace alone, in the foreground, until SIGINT or SIGTERM."""
    try:
        server = _workspace(host)
    except OSError as error:
        raise click.ClickException(_not_served(host, error)) from None
    click.echo("benchmarks: " + (", ".join(str(path) for path in loaded) or "none found"), err=True)
    click.echo(f"results workspace at {server.url}", err=True)
    from n8n_deepeval_pipeline.console.workspace_serving import serve_in_foreground

    serve_in_foreground(server)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_SHUTDOWN_S = 5.0  # for dagster dev to stop its processes in order
_GRACE_S = 2.0  # for what it left behind to stop on SIGTERM, before SIGKILL
_POLL_S = 0.2  # how soon a stop signal is acted on


def _serve(command: list[str]) -> int:
    """Run ``dagster dev`` in a process group of its own until it exits or is told to stop.

    A stop signal here is passed to ``dagster dev`` alone, which stops its processes in
    order (signalled all at once, it restarts a code server that then outlives it by
    45 s); whatever of its group is left a few seconds later is stopped too. Its exit
    code, or 0 after a stop.
    """
    stop = threading.Event()
    # Set before the child starts, so that no stop signal is missed; a signal only sets
    # the flag, so a second one (during the shutdown) changes nothing. A shell hands a
    # background job SIGINT ignored, which exec keeps (and Dagster maps SIGTERM to its
    # SIGINT handling, so it would ignore both); a handler is reset to the default on
    # exec, so the child starts with default dispositions.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda _signum, _frame: stop.set())
    dagster = subprocess.Popen(command, start_new_session=True)
    code = _wait(dagster, stop.is_set)
    if code is None:
        dagster.send_signal(signal.SIGTERM)
        shutdown = time.monotonic() + _SHUTDOWN_S
        _wait(dagster, lambda: time.monotonic() > shutdown)
        code = 0
    _stop_group(dagster)
    dagster.wait()
    return code


def _wait(process: subprocess.Popen[bytes], until: Callable[[], bool]) -> int | None:
    """The process's exit code, or None if ``until()`` holds before it exits."""
    while not until():
        with contextlib.suppress(subprocess.TimeoutExpired):
            return process.wait(timeout=_POLL_S)
    return None


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to a process group; whether any of it was still there."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


def _stop_group(leader: subprocess.Popen[bytes]) -> None:
    """SIGTERM what is left of the leader's process group, SIGKILL it after a grace period.

    The leader is reaped as soon as it exits (``poll``): unreaped, it is a zombie still in
    its group, which then answers signals until the grace period runs out.
    """
    group = leader.pid
    deadline = time.monotonic() + _GRACE_S
    if _signal_group(group, signal.SIGTERM):
        while time.monotonic() < deadline and (leader.poll() is None or _signal_group(group, 0)):
            time.sleep(0.1)
        _signal_group(group, signal.SIGKILL)
