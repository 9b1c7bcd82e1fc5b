#!/usr/bin/env python3
"""Screenshot a benchmark run's trace in Arize Phoenix, for docs/guides/traces.md.

    scripts/traces_screenshot.py PNG [--width 1440] [--height 900]

Installs Phoenix if needed (scripts/install_phoenix.sh), serves it on loopback with its
data in a temporary folder, runs the bundled example with a loopback judge and
N8N_DEEPEVAL_OTLP_ENDPOINT pointing at it, then opens the run's trace in the system
Chromium (playwright drives /usr/bin/chromium: no browser download) and saves the page.
Prints the trace id and its span count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge  # noqa: E402
from tests.live.phoenix_server import ensure_phoenix, phoenix_server  # noqa: E402

EXAMPLE = ROOT / "examples" / "support_agent" / "benchmark.yaml"
CHROMIUM = "/usr/bin/chromium"


def _run_example(home: Path, endpoint: str, judge: LoopbackJudge) -> dict[str, object]:
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": judge.base_url,
        "N8N_DEEPEVAL_OTLP_ENDPOINT": endpoint,
    }
    done = subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(EXAMPLE), "--json"],
        env=env, capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    summary: dict[str, object] = json.loads(done.stdout)
    return summary


def _screenshot(url: str, png: Path, size: tuple[int, int]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        page.goto(url, wait_until="networkidle")
        # The first workflow call of the tree, its scores shown (its evaluation events).
        call = page.get_by_text("invoke_workflow", exact=False).first
        call.wait_for()
        call.click()
        page.get_by_role("tab", name="Events").click()
        events = page.get_by_text("gen_ai.evaluation.result")
        events.first.wait_for()
        for number in (0, 1):  # two scores opened: name, value, label, explanation
            events.nth(number).click()
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(png))
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    install_dir = ensure_phoenix()
    judge = LoopbackJudge(latency_s=0.05).start()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            data = Path(scratch) / "phoenix"
            data.mkdir()
            with phoenix_server(install_dir, data) as phoenix:
                _run_example(Path(scratch) / "home", phoenix.base_url, judge)
                spans = phoenix.wait_for_trace()
                root = next(span for span in spans if span["parent_id"] is None)
                trace_id = root["context"]["trace_id"]
                project = phoenix.project_id()
                url = f"{phoenix.base_url}/projects/{project}/traces/{trace_id}"
                _screenshot(url, args.png, (args.width, args.height))
    finally:
        judge.stop()
    print(f"trace {trace_id}: {len(spans)} spans -> {args.png}")


if __name__ == "__main__":
    main()
