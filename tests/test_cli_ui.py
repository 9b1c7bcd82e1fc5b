"""`n8n-deepeval ui` started from a script: a free port, and a SIGTERM to its group stops it."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import descendant_pids

pytestmark = pytest.mark.slow


def as_a_background_job() -> None:
    """What a shell gives a job it starts in the background: a new group, SIGINT ignored."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def process_groups() -> dict[int, int]:
    """Live process → its process group."""
    groups = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            groups[int(stat.parent.name)] = int(fields[2])
    return groups


def members(groups: set[int]) -> set[int]:
    """Live processes of these process groups (the ones this test's `ui` started)."""
    return {pid for pid, group in process_groups().items() if group in groups}


def wait_for_url(log: Path, deadline: float) -> str:
    while time.monotonic() < deadline:
        found = re.search(r"Dagster UI at (http://\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError(log.read_text())


def wait_until_served(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} never answered")


def test_ui_takes_the_next_free_port_and_stops_on_a_sigterm_to_its_group(tmp_path):
    groups = set()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    (tmp_path / "benchmarks").mkdir()  # no benchmark: no sensor starts a run
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
        "N8N_DEEPEVAL_BENCHMARKS": str(tmp_path / "benchmarks"),
    }
    env.pop("DAGSTER_HOME", None)
    log = tmp_path / "ui.log"
    with log.open("w") as output:
        ui = subprocess.Popen(
            [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "ui", "--port", str(port)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=as_a_background_job,
        )
    try:
        deadline = time.monotonic() + 180
        url = wait_for_url(log, deadline)
        chosen = int(url.rsplit(":", 1)[1])
        assert url == f"http://127.0.0.1:{chosen}" and chosen > port
        assert f"({port} is taken)" in log.read_text()
        wait_until_served(url, deadline)
        started = process_groups()
        groups = {ui.pid} | {started[pid] for pid in descendant_pids(ui.pid) if pid in started}
        assert len(members(groups)) >= 4  # dagster dev, its webserver, daemon, code server
        os.killpg(ui.pid, signal.SIGTERM)
        stopped = time.monotonic()
        while members(groups) and time.monotonic() - stopped < 10:
            time.sleep(0.1)
        assert members(groups) == set(), "still running 10 s after SIGTERM"
        assert ui.wait(timeout=1) == 0
    finally:
        taken.close()
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        ui.wait()
