"""A test double of a child process, speaking ``worker.child_channel``'s messages.

``python -m tests.worker.fake_child FD BEHAVIOUR``: it prints where it runs and what its
environment holds, then, asked anything, behaves as named: ``echo`` answers ``done``
with the question; ``fail`` says it failed, quoting the secret it was asked with;
``crash`` prints a traceback-like line and exits 5; ``hang`` never answers; ``orphan``
reports its pid and waits for its parent to die; ``abort`` answers, then aborts.
"""

from __future__ import annotations

import os
import sys
import time

from n8n_deepeval_pipeline.worker.child_channel import connect


def main() -> None:
    channel = connect()
    behaviour = sys.argv[2]
    print(f"cwd {os.getcwd()}", flush=True)
    print(f"environment holds {sorted(os.environ)}", flush=True)
    asked = channel.receive()
    assert asked is not None
    if behaviour == "echo":
        channel.send("update", "half-way")
        channel.send("done", asked.body)
    elif behaviour == "fail":
        channel.send("failed", f"the judge refused {asked.body}", error_kind="judge_auth")
        sys.exit(1)
    elif behaviour == "crash":
        print(f"RuntimeError: the worker broke holding {asked.body}", file=sys.stderr, flush=True)
        os._exit(5)
    elif behaviour == "abort":
        channel.send("done", asked.body)
        os.abort()
    elif behaviour == "orphan":
        channel.send("ready", os.getpid())
        while True:
            time.sleep(1)
    else:  # hang
        time.sleep(3600)


if __name__ == "__main__":
    main()
