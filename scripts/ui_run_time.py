"""How long a run of the example takes when launched as the UI launches it, against the CLI.

    .venv/bin/python scripts/ui_run_time.py            # 2 rounds; --rounds N, --keep

Each measurement starts in a fresh working folder with a copy of the bundled example
(``examples/support_agent``), the dry-run judge and the default pool, and times:

- ``cli``: ``n8n-deepeval run benchmark.yaml`` end to end (imports included; it executes
  every step in its one process, one after the other);
- ``ui``: what Dagster's run launcher does for a run started from the UI: a fresh Python
  process loads the code location (``-m n8n_deepeval_pipeline.orchestration.definitions``)
  and executes the job for the partition on a persistent instance with the job's own
  executor (``execute_job`` of a reconstructable job), so every step runs as the UI's
  would. ``ui run`` is the run's own start-to-end time in the event log, ``ui wall`` the
  process's, imports included (the UI's run worker pays that too).

Prints one line per measurement, then the medians and the ratio ui wall / cli.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent"
JOB = "support_agent__benchmark"

# The child that stands in for the UI's run worker: load the code location, run the job.
_UI_RUN = """
import sys, time
started = time.monotonic()
import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository
from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner, local_instance

benchmark_file = sys.argv[1]
with local_instance() as instance:
    key = BenchmarkRunner(
        load_benchmark(benchmark_file), __import__("pathlib").Path(benchmark_file), instance
    ).register_current_version()
    job = ReconstructableRepository.for_module(
        "n8n_deepeval_pipeline.orchestration.definitions", "defs", sys.argv[2]
    ).get_reconstructable_job(sys.argv[3])
    result = dg.execute_job(job, instance=instance, tags={"dagster/partition": key})
    run = instance.get_run_record_by_id(result.run_id)
    steps = len({e.step_key for e in result.all_events if e.is_step_success})
    print(f"RUN {int(result.success)} {run.end_time - run.start_time:.2f} {steps}")
"""


def _environment(home: Path) -> dict[str, str]:
    benchmarks = home / "benchmarks"
    shutil.copytree(EXAMPLE, benchmarks / "support_agent")
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home / "home"),
        "N8N_DEEPEVAL_BENCHMARKS": str(benchmarks),
        "PYTHONUNBUFFERED": "1",
    }
    for name in ("DAGSTER_HOME", "N8N_DEEPEVAL_DUCKDB", "N8N_DEEPEVAL_JUDGE_STATE"):
        env.pop(name, None)
    return env


def time_cli(home: Path) -> float:
    """Wall time of ``n8n-deepeval run`` on a fresh copy of the example."""
    env = _environment(home)
    benchmark = home / "benchmarks" / "support_agent" / "benchmark.yaml"
    command = [str(Path(sys.executable).parent / "n8n-deepeval"), "run", str(benchmark)]
    started = time.monotonic()
    done = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: the example's pass rate (no --fail-under here)
        raise RuntimeError(f"cli run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed


def time_ui(home: Path) -> tuple[float, float, int]:
    """(process wall time, the run's own time, steps) of a UI-like run of the example."""
    env = _environment(home)
    benchmark = home / "benchmarks" / "support_agent" / "benchmark.yaml"
    command = [sys.executable, "-c", _UI_RUN, str(benchmark), str(ROOT), JOB]
    started = time.monotonic()
    done = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("RUN ")]
    if done.returncode != 0 or not lines or lines[-1].split()[1] != "1":
        raise RuntimeError(f"ui-like run failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    _, _, run_s, steps = lines[-1].split()
    return elapsed, float(run_s), int(steps)


def main() -> None:
    """Time both ways for a few rounds and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the working folders")
    args = parser.parse_args()
    cli, ui_wall, ui_run = [], [], []
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="ui-run-time-") as folder:
            cli.append(time_cli(Path(folder) / "cli"))
            wall, run, steps = time_ui(Path(folder) / "ui")
            ui_wall.append(wall)
            ui_run.append(run)
            print(
                f"round {round_ + 1}: cli {cli[-1]:.1f} s | ui wall {wall:.1f} s, "
                f"ui run {run:.1f} s ({steps} steps)",
                flush=True,
            )
            if args.keep:
                shutil.copytree(folder, f"{folder}-kept")
    cli_s, wall_s, run_s = (statistics.median(v) for v in (cli, ui_wall, ui_run))
    print(
        f"median: cli {cli_s:.1f} s | ui wall {wall_s:.1f} s | ui run {run_s:.1f} s | "
        f"ui wall / cli = {wall_s / cli_s:.2f}"
    )


if __name__ == "__main__":
    main()
