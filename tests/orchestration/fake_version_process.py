"""A test double of a version's calling process (``orchestration.family_run``'s ``main``).

``python -m tests.orchestration.fake_version_process FD FILE KEY NAME SHARED FOLDER``: it
prints a progress line, marks itself ready, reports its calls done as the real one does,
and then ends as its version's name says: ``aborts`` as a C++ extension's forced unwind
ends a process at shutdown (SIGABRT, exit -6), ``clean`` with exit 0, ``dies`` before any
report (exit 7).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from n8n_deepeval_pipeline.orchestration.call_barrier import arrive
from n8n_deepeval_pipeline.orchestration.family_run import VersionCalls
from n8n_deepeval_pipeline.worker.child_channel import connect


def main() -> None:
    channel = connect()
    key, name, meeting = sys.argv[3], sys.argv[4], Path(sys.argv[6])
    print(f"[{name}] called 4/4", file=sys.stderr, flush=True)
    if name == "dies":
        os._exit(7)
    arrive(meeting, key)
    channel.send("done", VersionCalls(completed=True, failed_checks=[], errors=[], run_id=name))
    if name == "aborts":
        print("terminate called after throwing an instance of ''", file=sys.stderr, flush=True)
        os.abort()


if __name__ == "__main__":
    main()
