#!/usr/bin/env python3
"""Screenshot the results workspace after CLI runs of the example's two versions.

    .venv/bin/python scripts/workspace_screenshots.py OUT_DIR [--keep]

In a fresh working folder with a copy of the bundled example and the dry-run judge: `run`
of the first version, `run` of its second (`workflow.v2.json`, which regresses: exit 5),
then `n8n-deepeval ui --results-only` on a free port, and the system Chromium
(/usr/bin/chromium, driven by playwright) writes into OUT_DIR:

- ``workspace_version.png``: the second version: its gate, its cases × runs grid;
- ``workspace_home.png``: every benchmark with its latest version and gate;
- ``workspace_benchmark.png``: the benchmark's versions with the pass-rate trend;
- ``workspace_case.png``: a case that dropped, beside the same case in the baseline;
- ``workspace_compare.png``: the two versions compared, the cases that moved.

Then, in a second home, the first version run again with its judge-backed metrics scored
by the loopback judge (a deterministic test double: real scores, not placeholders),
`n8n-deepeval review --no-browser` serving its review queue, and:

- ``workspace_review.png``: a run to label, the judge's verdict not shown yet;
- ``workspace_review_revealed.png``: the same run labelled, the judge's verdict beside.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent"
CLI = Path(sys.executable).parent / "n8n-deepeval"
CHROMIUM = Path("/usr/bin/chromium")
ARGUMENTS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
WIDTH, HEIGHT = 1440, 900
# Each picture: its path ({first}, {second}: the versions' keys) and the page's height.
PAGES = {
    "workspace_version.png": ("/benchmarks/support_agent/versions/{second}", HEIGHT),
    "workspace_home.png": ("/", 520),
    "workspace_benchmark.png": ("/benchmarks/support_agent", 760),
    "workspace_case.png": ("/benchmarks/support_agent/versions/{second}/cases/refund", 1100),
    "workspace_compare.png": ("/benchmarks/support_agent/compare", 1000),
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _copy(folder: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A copy of the example in ``folder/name``, and the environment of a home of its own."""
    shutil.copytree(EXAMPLE, folder / name)
    env = {**os.environ, "N8N_DEEPEVAL_HOME": str(folder / f"{name}_home"),
           "N8N_DEEPEVAL_REPORTS_PORT": str(_free_port()), "PYTHONUNBUFFERED": "1"}  # fmt: skip
    for variable in ("DAGSTER_HOME", "N8N_DEEPEVAL_BENCHMARKS", "N8N_DEEPEVAL_WORKSPACE_URL"):
        env.pop(variable, None)
    return folder / name / "benchmark.yaml", env


def _run(env: dict[str, str], benchmark: Path, expected: int) -> str:
    """A `run` of the benchmark; the version key it ran."""
    done = subprocess.run(
        [str(CLI), "run", str(benchmark), "--json"], env=env, capture_output=True, text=True
    )
    if done.returncode != expected:
        sys.exit(f"run exited {done.returncode}, not {expected}:\n{done.stderr[-2000:]}")
    return str(json.loads(done.stdout)["workflow_hash"])[:12]


def _served(
    command: list[str], env: dict[str, str], log: Path, said: str
) -> tuple[subprocess.Popen, str]:
    """A command started in its own session; the address its output names after ``said``."""
    with log.open("w") as output:
        process = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        found = re.search(said + r" (http://\S+)", log.read_text())
        if found:
            return process, found.group(1)
        time.sleep(0.2)
    process.kill()
    sys.exit(f"{command[1]} did not start:\n{log.read_text()[-2000:]}")


def _workspace(env: dict[str, str], benchmark: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`ui --results-only` started in its own session; the address it serves at."""
    ui, root = _served(
        [str(CLI), "ui", str(benchmark), "--results-only"], env, log, "results workspace at"
    )
    return ui, root.rstrip("/")


def _review_pictures(folder: Path, out: Path, browser) -> None:
    """The review page on the first version scored by the loopback judge: before, after."""
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

    benchmark, env = _copy(folder, "judged")
    judge = LoopbackJudge(latency_s=0.0).start()
    try:
        judged = {**env, "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
                  "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
                  "N8N_DEEPEVAL_JUDGE_BASE_URL": f"{judge.base_url}/v1"}  # fmt: skip
        _run(judged, benchmark, 0)
    finally:
        judge.stop()
    command = [str(CLI), "review", str(benchmark), "--sample", "12", "--reviewer", "Ann Lee",
               "--no-browser"]  # fmt: skip
    review, page_url = _served(command, env, folder / "review.log", "review page:")
    try:
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        page.goto(page_url)
        page.locator("#reviewer-name").press("Enter")
        page.locator("form.label-form").wait_for()
        page.screenshot(path=str(out / "workspace_review.png"))
        print(out / "workspace_review.png")
        for key in ("2", "f", "Enter"):  # rate the first metric 2 and fail it
            page.keyboard.press(key)
        if page.locator("p.missing").is_visible():  # a second metric: pass it
            page.keyboard.press("p")
            page.keyboard.press("Enter")
        page.locator("table.verdicts").wait_for()
        page.screenshot(path=str(out / "workspace_review_revealed.png"))
        print(out / "workspace_review_revealed.png")
        page.close()
    finally:
        os.killpg(review.pid, signal.SIGTERM)
        review.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    arguments = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit("no /usr/bin/chromium: run scripts/install_chromium.sh")
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="n8n-deepeval-workspace-"))
    benchmark, env = _copy(folder, "support_agent")
    first = _run(env, benchmark, 0)
    workflow = folder / "support_agent" / "workflow.json"
    workflow.write_text((folder / "support_agent" / "workflow.v2.json").read_text())
    second = _run(env, benchmark, 5)
    ui, root = _workspace(env, benchmark, folder / "ui.log")
    arguments.out.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGUMENTS)
            for name, (path, height) in PAGES.items():
                page = browser.new_page(viewport={"width": WIDTH, "height": height})
                page.goto(root + path.format(first=first, second=second))
                page.screenshot(path=str(arguments.out / name))
                print(arguments.out / name)
                page.close()
            _review_pictures(folder, arguments.out, browser)
            browser.close()
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)
        if not arguments.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
