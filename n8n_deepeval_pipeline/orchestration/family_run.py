"""A workflow and its variants run side by side: their calls at the same time, then scored.

One Dagster run is one version. So that a drift of the workflow's models (their latency,
their answers, an outage) meets the workflow and its variants alike, the versions' calls
overlap: each version's steps up to its outputs run in a process of their own, all at
once, each with its share of the target's maxConcurrency (run tag ``calls_shared_by``:
together they load n8n and its models as one run would). Then each version is scored in
the calling process, one after the other: the worker pool is the machine's, and a
head-to-head metric reads its opponent's stored outputs, which are all there by then.

A trial (``run --filter``) lives in a throwaway instance that no other process sees: its
versions are called one after the other, still all before any is scored.

Their calls start together: each process marks itself ready in a shared folder once its
harness copy is served, and waits for the others (``call_barrier``).

Run as ``python -m n8n_deepeval_pipeline.orchestration.family_run FILE KEY NAME SHARED
FOLDER`` for one version's calls; it prints how they ended as one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.orchestration.automation import CALLS_SHARED_BY
from n8n_deepeval_pipeline.orchestration.call_barrier import CALLS_START_TOGETHER, arrive
from n8n_deepeval_pipeline.orchestration.local_runner import (
    BenchmarkRunner,
    Materialised,
    local_instance,
)
from n8n_deepeval_pipeline.workflow.variants import Member

_POLL_S = 0.2
SCORED_FROM = "metric_scores"
"""The first asset of a version's scoring: everything before it is its calls."""


def _tags(members: list[Member]) -> dict[str, str]:
    return {CALLS_SHARED_BY: str(len(members))}


@contextmanager
def _meeting_point() -> Iterator[Path]:
    """The folder where the versions' processes mark themselves ready to call."""
    with tempfile.TemporaryDirectory(prefix="n8n-deepeval-calls-") as folder:
        yield Path(folder)


def _prefix(member: Member) -> str:
    return f"[{member.name}] "


def call_one_after_another(
    runner: BenchmarkRunner, members: list[Member], verbose: bool
) -> list[Materialised]:
    """Each version's calls in this process, in turn (a trial's throwaway instance)."""
    return [
        runner.materialise(
            member.key,
            verbose=verbose,
            before_asset=SCORED_FROM,
            tags=_tags(members),
            progress_prefix=_prefix(member),
        )
        for member in members
    ]


def call_side_by_side(
    source: Path, members: list[Member], judge_cache: bool, verbose: bool
) -> list[Materialised]:
    """Each version's calls in a process of its own, all at once; how each ended.

    Their progress lines go to this process's stderr, each after its version's name.
    """
    processes: list[subprocess.Popen[str]] = []
    with _meeting_point() as meeting:
        try:
            for member in members:
                command = [
                    sys.executable,
                    "-m",
                    __name__,
                    str(source),
                    member.key,
                    member.name,
                    str(len(members)),
                    str(meeting),
                    *([] if judge_cache else ["--no-cache"]),
                    *(["--verbose"] if verbose else []),
                ]
                processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
            while any(process.poll() is None for process in processes):
                for member, process in zip(members, processes, strict=True):
                    if process.returncode is not None:  # ended, maybe without its mark
                        arrive(meeting, member.key)  # it will not call: none waits for it
                time.sleep(_POLL_S)
            return [
                _ended(member, process.communicate()[0], process.returncode)
                for member, process in zip(members, processes, strict=True)
            ]
        finally:
            for process in processes:  # this process was interrupted: leave no caller behind
                if process.poll() is None:
                    process.terminate()
                    process.wait()


def _ended(member: Member, printed: str, exit_code: int) -> Materialised:
    """How one version's calls ended, from what its process printed last."""
    lines = printed.strip().splitlines()
    try:
        said = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        said = None
    if exit_code != 0 or not isinstance(said, dict):
        error = f"the process calling {member.name} ({member.key}) ended with exit code {exit_code}"
        return Materialised(False, (), (error,))
    return Materialised(
        bool(said["completed"]),
        tuple(said["failed_checks"]),
        tuple(said["errors"]),
        said["run_id"],
    )


def main(arguments: list[str] | None = None) -> int:
    """Materialise one version's calls and print how they ended (one line of JSON)."""
    parser = argparse.ArgumentParser(description="One version's calls, beside its family's.")
    parser.add_argument("file", type=Path)
    parser.add_argument("key")
    parser.add_argument("name")
    parser.add_argument("shared_by", type=int)
    parser.add_argument("meeting", type=Path, help="where the versions mark themselves ready")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    given = parser.parse_args(arguments)
    benchmark = load_benchmark(given.file)
    tags = {CALLS_SHARED_BY: str(given.shared_by), CALLS_START_TOGETHER: str(given.meeting)}
    try:
        with local_instance() as instance:
            runner = BenchmarkRunner(benchmark, given.file, instance, not given.no_cache)
            ended = runner.materialise(
                given.key,
                verbose=given.verbose,
                before_asset=SCORED_FROM,
                tags=tags,
                progress_prefix=f"[{given.name}] ",
            )
    finally:  # ended before calling (a failed step): the others need not wait for it
        arrive(given.meeting, given.key)
    said = {
        "completed": ended.completed,
        "failed_checks": list(ended.failed_checks),
        "errors": list(ended.errors),
        "run_id": ended.run_id,
    }
    print(json.dumps(said))
    return 0


if __name__ == "__main__":
    sys.exit(main())
