"""How `ui` watches over `dagster dev`: its port, its stop, and what it leaves behind.

`dagster dev` is stood in for by small commands, so that each way of ending is quick.
"""

import errno
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import click
import pytest

from n8n_deepeval_pipeline.console.ui_command import (
    _GRACE_S,
    _STOP_SIGNALS,
    _free_port,
    _serve,
    _stop_group,
)


@pytest.fixture
def own_signal_handlers():
    """The test process's stop-signal handlers as they were, whatever `_serve` sets."""
    before = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


def interrupt_after(seconds: float) -> threading.Timer:
    """A Ctrl-C to this process in ``seconds``."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def gone(pid: int, within_s: float = 2.0) -> bool:
    """Whether the process has exited (a zombie its new parent has not reaped counts)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_port_in_use_is_skipped_and_any_other_refusal_is_said_as_it_is(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert _free_port("127.0.0.1", port) > port

    def refused(self, address):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(socket.socket, "bind", refused)  # a port below 1024, not as root
    with pytest.raises(click.ClickException) as caught:
        _free_port("127.0.0.1", 80)
    assert caught.value.message == "cannot listen on 127.0.0.1:80: Permission denied"


def test_the_group_is_stopped_as_soon_as_its_leader_exits_not_after_the_grace_period():
    # SIGTERM at its default: an ignored signal is inherited across exec, and a test process
    # may have inherited one, which would make the leader wait for SIGKILL.
    leader = subprocess.Popen(["sleep", "60"], start_new_session=True, preexec_fn=_default_term)
    started = time.monotonic()
    try:
        _stop_group(leader)
    finally:
        leader.kill()
        leader.wait()
    assert leader.returncode == -signal.SIGTERM  # stopped by SIGTERM, not the grace's SIGKILL
    assert time.monotonic() - started < _GRACE_S / 2


def _default_term() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_a_ctrl_c_stops_dagster_dev_and_the_ui_exits_0(own_signal_handlers):
    timer = interrupt_after(0.3)
    started = time.monotonic()
    try:
        assert _serve(["sleep", "60"]) == 0
    finally:
        timer.cancel()
    assert time.monotonic() - started < 2.0


def test_a_ctrl_c_during_the_grace_period_still_kills_what_was_left(tmp_path, own_signal_handlers):
    # dagster dev exits at once and leaves a process that ignores SIGTERM in its group
    pid_file = tmp_path / "left.pid"
    leaves_one = f'trap "" TERM; sleep 60 & echo $! > {pid_file}; exit 0'
    timer = interrupt_after(0.5)  # within the 2 s grace period
    try:
        assert _serve(["bash", "-c", leaves_one]) == 0
    finally:
        timer.cancel()
        left = int(pid_file.read_text())
        if not gone(left, within_s=0):
            os.kill(left, signal.SIGKILL)
    assert gone(left)
