#!/usr/bin/env python3
"""Screenshot the Dagster UI after CLI runs of two versions and a re-score backfill.

    .venv/bin/python scripts/ui_screenshots.py OUT_DIR [--port 3300] [--keep]

In a fresh working folder with a copy of the bundled example and the dry-run judge: `run`
of the first version, `run` of its second (`workflow.v2.json`, which regresses: exit 5),
`backfill --from metric_scores` (both re-scored), then `n8n-deepeval ui`, and headless
Chromium (/usr/bin/chromium, scripts/install_chromium.sh) writes into OUT_DIR:

- ``asset_graph.png``: the benchmark's asset group, its assets as a graph;
- ``job_runs.png``: the benchmark job's runs page, listing the CLI's runs;
- ``comparison_partitions.png``: ``version_comparison``'s partitions (one per version),
  the second one open with its verdicts;
- ``check_partitions.png``: its ``no_regression`` check after the backfill, its latest
  execution with the partition (the version) it failed for.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from report_screenshot import CHROMIUM, chromium_screenshot  # beside this script

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent"
CLI = Path(sys.executable).parent / "n8n-deepeval"
LOCATION = "n8n_deepeval_pipeline.orchestration.definitions"
# Each page with its window size; {candidate} is the second version's partition key.
PAGES = {
    "asset_graph.png": (f"/locations/{LOCATION}/asset-groups/support_agent", (1600, 1300)),
    "job_runs.png": (f"/locations/{LOCATION}/jobs/support_agent__benchmark/runs", (1600, 1000)),
    "comparison_partitions.png": (
        "/assets/support_agent/version_comparison?view=partitions&partition={candidate}",
        (1600, 1000),
    ),
    "check_partitions.png": (
        "/assets/support_agent/version_comparison?view=checks&checkDetail=no_regression",
        (1600, 1000),
    ),
}


def _environment(folder: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(folder / "home"),
        "N8N_DEEPEVAL_BENCHMARKS": str(folder / "benchmarks"),
        "PYTHONUNBUFFERED": "1",
    }
    for name in ("DAGSTER_HOME", "N8N_DEEPEVAL_DUCKDB", "N8N_DEEPEVAL_JUDGE_STATE"):
        env.pop(name, None)
    return env


def _cli(folder: Path, *arguments: str, expect: tuple[int, ...]) -> None:
    done = subprocess.run(
        [str(CLI), *arguments], env=_environment(folder), cwd=folder, capture_output=True, text=True
    )
    print(f"n8n-deepeval {' '.join(arguments[:1])}: exit {done.returncode}", file=sys.stderr)
    if done.returncode not in expect:
        raise RuntimeError(f"{arguments} exited {done.returncode}:\n{done.stderr[-3000:]}")


def prepare(folder: Path) -> None:
    """Two versions run by the CLI (the second regresses), then a re-score backfill."""
    copy = folder / "benchmarks" / "support_agent"
    shutil.copytree(EXAMPLE, copy)
    benchmark = str(copy / "benchmark.yaml")
    _cli(folder, "run", benchmark, expect=(0, 1))
    (copy / "workflow.json").write_text((copy / "workflow.v2.json").read_text())
    _cli(folder, "run", benchmark, expect=(5,))
    _cli(folder, "backfill", benchmark, "--from", "metric_scores", expect=(0,))


def _wait_for(url: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise RuntimeError(f"the UI did not answer at {url} within {timeout_s:.0f} s")


def screenshot(url: str, png: Path, size: tuple[int, int]) -> None:
    """Render the UI page at ``url`` once its queries have had time to answer."""
    budget = "--virtual-time-budget=25000"  # the UI loads its data after the page
    chromium_screenshot(url, png, size, budget, timeout_s=180)


def candidate_key() -> str:
    """The partition key of the example's second version (``workflow.v2.json``)."""
    from n8n_deepeval_pipeline.workflow.hashing import extract_workflow, version_key
    from n8n_deepeval_pipeline.workflow.hashing import workflow_hash as hash_of

    second = json.loads((EXAMPLE / "workflow.v2.json").read_text(encoding="utf-8"))
    return version_key(hash_of(extract_workflow(second)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="the folder the PNG files go to")
    parser.add_argument("--port", type=int, default=3300)
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    arguments = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: run scripts/install_chromium.sh", file=sys.stderr)
        return 2
    arguments.out_dir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="ui-screenshots-"))
    try:
        prepare(folder)
        ui = subprocess.Popen(
            [str(CLI), "ui", "--port", str(arguments.port)],
            env=_environment(folder),
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its process group is stopped as a whole
        )
        try:
            url = f"http://127.0.0.1:{arguments.port}"
            _wait_for(url)
            for name, (page, size) in PAGES.items():
                screenshot(
                    url + page.format(candidate=candidate_key()), arguments.out_dir / name, size
                )
                print(arguments.out_dir / name)
        finally:
            os.killpg(ui.pid, signal.SIGTERM)
            ui.wait(timeout=60)
    finally:
        if not arguments.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
