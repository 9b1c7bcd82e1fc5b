"""How fast the CLI starts: wall time, heavy modules imported and the slowest imports.

    .venv/bin/python scripts/startup_figures.py            # 3 rounds; --rounds N, --top N

Each command runs in a fresh interpreter with an environment without n8n settings
(``N8N_API_URL`` and ``N8N_API_KEY`` removed): ``--help``, ``metrics``, ``validate`` of
the bundled example, and the example end to end (``run``, as ``scripts/example.sh`` does,
in a working folder of its own, warmed by one run that is not counted). For each it
prints the median wall time, which of Dagster, SciPy and DeepEval the command's own
process imported (none for the first three; ``run`` needs Dagster, and its workers, not
it, import DeepEval), and the ``--top`` imports with the largest cumulative time, from
one more run under ``python -X importtime`` (microseconds, a package including what it
imports; not counted in the median, which that flag slows). Last, Dagster's own floor:
a process that imports Dagster and materialises as many partitioned assets as the
example's run has steps, each doing nothing, on a warm SQLite instance of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent" / "benchmark.yaml"
HEAVY = ("dagster", "scipy", "deepeval")
COMMANDS = {
    "--help": ["--help"],
    "metrics": ["metrics"],
    "validate": ["validate", str(EXAMPLE)],
    "run": ["run", str(EXAMPLE)],
}

# The child: run one CLI command as the console script does; at its exit, list the heavy modules.
_CHILD = """
import atexit, json, sys
from n8n_deepeval_pipeline.cli import entry
def list_heavy():
    heavy = [name for name in {heavy!r} if name in sys.modules]
    with open(sys.argv[1], "w") as out:
        json.dump(heavy, out)
atexit.register(list_heavy)
entry(sys.argv[2:])
"""


# Dagster alone: the example's run has 12 steps (10 assets, metric_scores in 3).
FLOOR_STEPS = 12
_FLOOR_CHILD = """
import os, sys
import dagster as dg
os.environ["DAGSTER_HOME"] = sys.argv[1]
versions = dg.DynamicPartitionsDefinition(name="versions")
assets, upstream = [], []
for index in range({steps}):
    @dg.asset(name=f"step_{{index}}", deps=upstream, partitions_def=versions)
    def step() -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata={{"rows": 1}})
    assets.append(step)
    upstream = [step]
with dg.DagsterInstance.get() as instance:
    instance.add_dynamic_partitions("versions", ["v1"])
    assert dg.materialize(assets, instance=instance, partition_key="v1").success
"""


def dagster_floor(rounds: int) -> float:
    """Median wall time of a process that runs ``FLOOR_STEPS`` no-op assets in Dagster."""
    with tempfile.TemporaryDirectory(prefix="dagster-floor-") as home:
        Path(home, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        command = [sys.executable, "-c", _FLOOR_CHILD.format(steps=FLOOR_STEPS), home]
        subprocess.run(command, check=True, capture_output=True)  # creates the instance
        times = []
        for _ in range(rounds):
            started = time.monotonic()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.monotonic() - started)
    return statistics.median(times)


def child_environment(home: str) -> dict[str, str]:
    """No n8n settings, so nothing is read from an n8n; the working folder ``home``."""
    kept = {k: v for k, v in os.environ.items() if k not in ("N8N_API_URL", "N8N_API_KEY")}
    return {**kept, "N8N_DEEPEVAL_HOME": home}


def run_once(args: list[str], home: str, profile: bool) -> tuple[float, list[str], str]:
    """Wall time, heavy modules imported and (``profile``) the import profile of a command."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        flags = ["-X", "importtime"] if profile else []
        command = [sys.executable, *flags, "-c", _CHILD.format(heavy=HEAVY)]
        started = time.monotonic()
        done = subprocess.run(
            [*command, report.name, *args],
            env=child_environment(home),
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.monotonic() - started
        heavy = json.loads(Path(report.name).read_text() or "null")
    if heavy is None:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return elapsed, heavy, done.stderr


def slowest_imports(profile: str, top: int) -> list[tuple[int, str]]:
    """The ``top`` imports by cumulative microseconds in an ``-X importtime`` profile."""
    imports = []
    for line in profile.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        imports.append((int(cumulative), name.rstrip()))
    return sorted(imports, reverse=True)[:top]


def main() -> None:
    """Measure every command and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=8)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-figures-") as home:
        run_once(COMMANDS["run"], home, profile=False)  # the instance and database exist
        for name, args in COMMANDS.items():
            times, heavy = [], []
            for _ in range(options.rounds):
                elapsed, heavy, _ = run_once(args, home, profile=False)
                times.append(elapsed)
            _, _, profile = run_once(args, home, profile=True)
            print(
                f"{name:<9} median {statistics.median(times):.2f} s over {options.rounds} · "
                f"heavy modules imported: {', '.join(heavy) or 'none'}"
            )
            for cumulative, module in slowest_imports(profile, options.top):
                print(f"  {cumulative / 1e6:6.3f} s  {module}")
    floor = dagster_floor(options.rounds)
    print(
        f"{'dagster':<9} median {floor:.2f} s over {options.rounds} · {FLOOR_STEPS} no-op "
        "assets materialised in process on a warm SQLite instance (Dagster's own floor)"
    )


if __name__ == "__main__":
    main()
