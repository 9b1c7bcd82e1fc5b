"""`ui`: the Dagster UI and daemon, started and stopped as one process group, and the reports."""

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

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import EXIT_INVALID_CONFIG, Refused, exit_codes_stated

_UI_HOST = "127.0.0.1"
_PORTS_TO_TRY = 100
# Dagster 1.13 marks `dagster dev` superseded by `dg dev` (dagster-dg-cli, which runs dg
# projects: pyproject [tool.dg] and a defs/ folder) and says so at every start. A code
# location named by module is what `dagster dev -m` is for; only that one warning is
# left out, by its text, in the `dagster dev` process alone: any other still shows.
_SUPERSEDED_WARNING = "ignore:Function `dev_command` is superseded:FutureWarning"


def _free_port(first: int) -> int:
    """The first port from ``first`` up that nothing listens on (on the UI's host).

    Only a port in use is skipped: any other refusal (a port below 1024 without root)
    would refuse the next ports too, so it is said as it is.
    """
    last = min(first + _PORTS_TO_TRY, 65536) - 1
    for port in range(first, last + 1):
        with socket.socket() as probe:
            # As the webserver binds: a port left in TIME_WAIT counts as free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((_UI_HOST, port))
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    continue
                reason = error.strerror or str(error)
                raise click.ClickException(
                    f"cannot listen on {_UI_HOST}:{port}: {reason}"
                ) from None
            return port
    raise click.ClickException(f"no free port on {_UI_HOST} from {first} to {last}")


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


def _reports_served() -> AbstractContextManager[object]:
    """The reports folder served where the UI's report_url links point, if the port is free."""
    from n8n_deepeval_pipeline.console.report_server import ReportServer

    port = settings.reports_port()
    try:
        server = ReportServer(settings.reports_dir(), settings.REPORTS_HOST, port)
    except OSError as error:
        click.echo(
            f"reports are not served: {settings.REPORTS_HOST}:{port}: {error.strerror or error} "
            f"(the UI's report_url links point there; {settings.REPORTS_PORT_ENV} moves them)",
            err=True,
        )
        return contextlib.nullcontext()
    click.echo(f"reports at {server.url}", err=True)
    return server


@exit_codes_stated("ui")
@click.command()
@click.argument("files", nargs=-1, type=benchmarks.EXISTING_FILE)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=3000,
    show_default=True,
    help="The UI's port; when it is taken, the next free one.",
)
def ui(files: tuple[Path, ...], port: int) -> None:
    """Start the Dagster UI and daemon on 127.0.0.1 with the CLI's instance and database.

    It loads the benchmark FILES named, or else every benchmark file under
    $N8N_DEEPEVAL_BENCHMARKS (default ./benchmarks and the bundled examples), and serves
    the reports folder for the report links of its assets.
    """
    from n8n_deepeval_pipeline.orchestration.code_location import DEFINITIONS_MODULE
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    loaded = _named_benchmarks(files)
    with local_instance() as instance:  # created here, so that Dagster's processes find it made
        home = instance.root_directory
    click.echo(f"Dagster instance {home} · database {settings.database_path()}", err=True)
    click.echo("benchmarks: " + (", ".join(str(path) for path in loaded) or "none found"), err=True)
    with _reports_served():
        chosen = _free_port(port)
        taken = f" ({port} is taken)" if chosen != port else ""
        click.echo(f"Dagster UI at http://{_UI_HOST}:{chosen}{taken}", err=True)
        command = [
            sys.executable,
            "-W",
            _SUPERSEDED_WARNING,
            "-m",
            "dagster",
            "dev",
            "-h",
            _UI_HOST,
            "-p",
            str(chosen),
            "-m",
            DEFINITIONS_MODULE,
        ]
        code = _serve(command)
    sys.exit(code)


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
