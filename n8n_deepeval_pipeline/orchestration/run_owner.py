"""Runs started by a CLI process, and those left STARTED by one that died (``kill -9``).

An in-process run has no run launcher for Dagster's run monitoring to ask about, so each
run carries the host and process id of the CLI that runs it; a later CLI command or sensor
tick on that host marks failed the runs whose process is gone.
"""

from __future__ import annotations

import os
import socket

import dagster as dg

HOST_TAG = "n8n_deepeval/host"
PID_TAG = "n8n_deepeval/pid"

_UNFINISHED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
# Every run that may still ask the judge: queued, starting, going, or being cancelled.
_GOING = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    *_UNFINISHED,
    dg.DagsterRunStatus.CANCELING,
]


def owner_tags() -> dict[str, str]:
    """The tags naming this process as the run's owner."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def _alive(pid: int) -> bool:
    # A pid reused since keeps its run STARTED until that process ends too: never a live
    # run marked failed.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def fail_abandoned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed this host's unfinished CLI runs whose process has gone; their ids."""
    tags = {HOST_TAG: socket.gethostname()}
    failed = []
    for run in instance.get_runs(dg.RunsFilter(statuses=_UNFINISHED, tags=tags)):
        pid = run.tags.get(PID_TAG, "")
        if pid.isdigit() and not _alive(int(pid)):
            instance.report_run_failed(
                run, f"the process that ran it (pid {pid}) ended without finishing it"
            )
            failed.append(run.run_id)
    return failed


def unfinished_runs(instance: dg.DagsterInstance) -> set[str]:
    """The ids of the runs not finished yet (a CLI's killed run is once marked failed)."""
    return set(instance.get_run_ids(dg.RunsFilter(statuses=_GOING)))
