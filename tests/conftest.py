"""Shared fixtures and helpers: example paths, the dry-run worker pool, task building, and
the processes a test started (never the whole machine's)."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from n8n_deepeval_pipeline import (
    EvaluationItem,
    EvaluationResult,
    EvaluationTask,
    JudgeSpec,
    WorkerPool,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent"
DRY_RUN = JudgeSpec()
Z_95 = 1.959964  # the two-sided 95% normal quantile


def wilson_by_hand(passed: int, runs: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a pass rate, written out as its formula."""
    p = passed / runs
    denominator = 1 + Z_95**2 / runs
    center = (p + Z_95**2 / (2 * runs)) / denominator
    half = Z_95 * math.sqrt(p * (1 - p) / runs + Z_95**2 / (4 * runs**2)) / denominator
    return center - half, center + half


def loopback_judge_environment(home: Path, base_url: str) -> dict[str, str]:
    """What a command run in its own home, judged by a loopback judge at ``base_url``, reads."""
    return {
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "DEEPEVAL_POOL_SIZE": "2",
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": base_url,
    }


@pytest.fixture(scope="session", autouse=True)
def own_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temp folder of the session's own, for what pools keep there (a crashed worker's
    log), here and in the commands the tests start."""
    folder = tmp_path_factory.mktemp("temp")
    before = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(folder), str(folder)
    yield folder
    tempfile.tempdir = before[1]
    if before[0] is None:
        os.environ.pop("TMPDIR")
    else:
        os.environ["TMPDIR"] = before[0]


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """A private copy of the support-agent example (tests may edit its workflow)."""
    target = tmp_path / "support_agent"
    shutil.copytree(EXAMPLE, target)
    return target / "benchmark.yaml"


@pytest.fixture
def started_children(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every child process the launcher starts while the test runs, in order."""
    from n8n_deepeval_pipeline.worker import launcher

    children: list[Any] = []

    class Counted(launcher.Child):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            children.append(self)

    monkeypatch.setattr(launcher, "Child", Counted)
    return children


@pytest.fixture(scope="session")
def dry_run_pool() -> Iterator[WorkerPool]:
    """Two warmed workers shared by the tests that only need a plain pool."""
    pool = WorkerPool(size=2, timeout_s=60)
    pool.start()
    yield pool
    pool.close()


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def make_task(
    config: dict[str, Any],
    item: EvaluationItem,
    task_id: int = 0,
    judge: JudgeSpec = DRY_RUN,
    **options: Any,
) -> EvaluationTask:
    """One metric on one run, as the evaluation plan builds it."""
    return EvaluationTask(
        task_id=task_id,
        run_id=options.pop("run_id", "h:r:0"),
        metric_label=config.get("label") or config.get("name") or config["metric"],
        config=config,
        item=item,
        judge=judge,
        timeout_s=options.pop("timeout_s", 60),
        **options,
    )


def evaluate_all(pool: WorkerPool, tasks: list[EvaluationTask]) -> list[EvaluationResult]:
    """Every task's result, in the tasks' order (the pool streams them as they finish)."""
    results = {result.task_id: result for result in pool.evaluate(tasks)}
    assert sorted(results) == sorted(task.task_id for task in tasks)
    return [results[task.task_id] for task in tasks]


def descendant_pids(root: int | None = None) -> set[int]:
    """Live processes started, directly or not, by ``root`` (this test process by default)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":  # a zombie has exited; only its parent has not reaped it yet
            parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {os.getpid() if root is None else root}
    while frontier:
        children = {pid for pid, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


def worker_processes() -> set[int]:
    """This test process's zygotes and workers (another pipeline's are not counted)."""
    found = set()
    for pid in descendant_pids():
        try:
            if b"n8n_deepeval_pipeline.worker.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except OSError:
            continue
    return found
