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

Run as ``python -m n8n_deepeval_pipeline.orchestration.family_run FD FILE KEY NAME SHARED
FOLDER`` (by ``worker.launcher``) for one version's calls; it sends how they ended.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pydantic import BaseModel

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.orchestration.automation import CALLS_SHARED_BY
from n8n_deepeval_pipeline.orchestration.call_barrier import CALLS_START_TOGETHER, arrive
from n8n_deepeval_pipeline.orchestration.local_runner import (
    BenchmarkRunner,
    Materialised,
    local_instance,
)
from n8n_deepeval_pipeline.worker.child_channel import connect
from n8n_deepeval_pipeline.worker.launcher import Child, ChildFailed, ChildSpec, launched
from n8n_deepeval_pipeline.workflow.variants import Member

SCORED_FROM = "metric_scores"
"""The first asset of a version's scoring: everything before it is its calls."""
CALLS_MODULE = __name__
"""What a version's calling process runs (``main`` below)."""
CALLS_LIMIT_S = 6 * 3600.0
"""The longest a version's calling process may take: past it, it is stopped as hung."""


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

    Each is a child of ``worker.launcher`` with this process's environment and working
    folder (it reads n8n's key and the benchmark's relative paths as the command does);
    its progress lines go to this process's stderr, each after its version's name. One
    that fails, dies or overruns its deadline is a failed version with its exit code and
    its log's last lines, even when it had reported its calls done.
    """
    flags = [*([] if judge_cache else ["--no-cache"]), *(["--verbose"] if verbose else [])]
    # Each is stopped at the end, at once if interrupted: no caller is left behind.
    with _meeting_point() as meeting, ExitStack() as started:
        children = []
        for member in members:
            arguments = (str(source), member.key, member.name, str(len(members)))
            spec = ChildSpec(
                name=f"the process calling {member.name} ({member.key})",
                module=CALLS_MODULE,
                args=(*arguments, str(meeting), *flags),
                deadline_s=CALLS_LIMIT_S,
                sanitised=False,
                scratch=False,
            )
            children.append(started.enter_context(launched(spec, on_line=_to_stderr)))
        with ThreadPoolExecutor(max_workers=len(children)) as waiting:
            each = [
                waiting.submit(_ended, member, child, meeting)
                for member, child in zip(members, children, strict=True)
            ]
            return [future.result() for future in each]


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _ended(member: Member, child: Child, meeting: Path) -> Materialised:
    """How one version's calls ended, from its process's last message and its exit.

    A process that died is a failed version with its exit code and last log lines, even
    after it reported its calls done (its run's id is kept: its Dagster run may say
    SUCCESS, but what the process did after it is unknown).
    """
    called: VersionCalls | None = None
    try:
        message = child.receive()
        if message.kind != "done":
            raise child.failure(f"sent {message.kind} instead of how its calls ended")
        called = message.of(VersionCalls)
        child.finish()
    except ChildFailed as failed:
        run_id = called.run_id if called is not None else None
        return Materialised(False, (), (failed.headline, *failed.tail), run_id)
    finally:  # ended before calling (a failed step): the others need not wait for it
        arrive(meeting, member.key)
    return Materialised(
        called.completed, tuple(called.failed_checks), tuple(called.errors), called.run_id
    )


class VersionCalls(BaseModel):
    """How one version's calls ended, as its process reports it."""

    completed: bool
    failed_checks: list[str]
    errors: list[str]
    run_id: str | None


def main(arguments: list[str] | None = None) -> int:
    """Materialise one version's calls and send how they ended to the process that asked."""
    channel = connect()
    parser = argparse.ArgumentParser(description="One version's calls, beside its family's.")
    parser.add_argument("connection", type=int, help="the launcher's connection")
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
    called = VersionCalls(
        completed=ended.completed,
        failed_checks=list(ended.failed_checks),
        errors=list(ended.errors),
        run_id=ended.run_id,
    )
    channel.send("done", called)
    return 0


if __name__ == "__main__":
    sys.exit(main())
