"""The report page in a real browser: headless Chromium renders it and shows the headline.

Skipped without /usr/bin/chromium unless N8N_DEEPEVAL_REQUIRE_CHROMIUM=1 (CI sets it and
installs Chromium with scripts/install_chromium.sh).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.report import write_report
from tests.conftest import EXAMPLE
from tests.report.png import distinct_colours, read_png, tallest_line
from tests.report.sample import (
    CANDIDATE,
    CONVERSATION_CASE,
    OPENING,
    SCENARIO,
    conversation_report,
    sample_report,
)

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = Path(__file__).parents[2] / "scripts" / "report_screenshot.py"
WIDTH, HEIGHT = 1280, 2000

if not CHROMIUM.exists() and os.environ.get("N8N_DEEPEVAL_REQUIRE_CHROMIUM") != "1":
    pytest.skip(
        "Chromium not installed (scripts/install_chromium.sh installs it)", allow_module_level=True
    )


def chromium(profile: Path, *arguments: str) -> str:
    """Run headless Chromium with its own profile and no network; its stdout."""
    assert CHROMIUM.exists(), "N8N_DEEPEVAL_REQUIRE_CHROMIUM=1: run scripts/install_chromium.sh"
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",  # CI runs as root, where the sandbox cannot start
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        *arguments,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    return write_report(sample_report(), folder)["report.html"]


def test_chromium_renders_the_headline_and_the_verdict(page, tmp_path):
    dom = chromium(tmp_path / "profile", "--dump-dom", page.as_uri())
    assert '<div class="value">62.5%</div>' in dom
    assert "95% CI 42.7–78.8% · 15 of 24 runs pass (allPass)" in dom
    assert "Regression: refund passes significantly less often than in the baseline." in dom
    assert '<span class="badge regression">regression</span>' in dom


def test_chromium_renders_a_simulated_conversation_turn_by_turn(tmp_path):
    """It was shown as its last answer alone: no turns, no stopping reason, no session."""
    written = write_report(conversation_report(), tmp_path / "conversation")["report.html"]
    dom = chromium(tmp_path / "profile", "--dump-dom", written.as_uri())
    assert f"<dt>scenario</dt><dd>{SCENARIO}</dd>" in dom
    assert '<dt>user <span class="chip">opening</span></dt>' in dom
    assert f"<dd>{OPENING}</dd>" in dom
    assert "<dd>Sorry! What is the order number?</dd>" in dom
    assert 'stopped: <span class="chip">turn limit</span>' in dom
    assert f"<code>{CANDIDATE}:{CONVERSATION_CASE}:3:thread-3</code>" in dom
    # both sides of the flagged case hold the conversation: four turns each
    assert dom.count('<dl class="fields turns">') == 2
    assert dom.count("<dt>assistant") == 4


def test_the_screenshot_is_a_full_size_picture_of_the_page(page, tmp_path):
    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile", f"--screenshot={shot}", page.as_uri())
    png = read_png(shot)
    assert (png.width, png.height) == (WIDTH, HEIGHT)
    # A blank or failed page has one or two colours; text, badges and charts have hundreds.
    assert distinct_colours(png) > 100


PASS_BORDER, FAIL_BORDER = (0x16, 0xA3, 0x4A), (0xDC, 0x26, 0x26)  # report.css .run borders


def test_a_flagged_case_shows_the_baseline_left_of_the_candidate(page, tmp_path):
    """refund: the baseline's passing answer beside the candidate's failing one, on top."""
    shot = tmp_path / "refund.png"
    head = ["--height", "420"]  # the case's head: the two answers, above the results table
    done = subprocess.run(
        [sys.executable, str(SCREENSHOT), str(page.parent), str(shot), "--case", "refund", *head],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    png = read_png(shot)
    left, right = range(png.width // 2), range(png.width // 2, png.width)
    # Each side's answer carries a 4-pixel border down its left edge: green passes, red fails.
    assert tallest_line(png, PASS_BORDER, left) > 40
    assert tallest_line(png, FAIL_BORDER, right) > 40
    assert tallest_line(png, FAIL_BORDER, left) < 30  # the regression badge at most
    assert tallest_line(png, PASS_BORDER, right) < 30


def _cli(home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "DEEPEVAL_POOL_SIZE": "2",
    }
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *arguments]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def example_regression(tmp_path_factory):
    """The README's walk-through: the example's second version, its report against the first."""
    folder = tmp_path_factory.mktemp("walk_through")
    shutil.copytree(EXAMPLE, folder / "support_agent")
    benchmark, home = folder / "support_agent" / "benchmark.yaml", folder / "home"
    assert _cli(home, "run", str(benchmark)).returncode == 0
    workflow = folder / "support_agent" / "workflow.json"
    workflow.write_text((folder / "support_agent" / "workflow.v2.json").read_text())
    assert _cli(home, "run", str(benchmark)).returncode == 5  # it regressed
    written = _cli(home, "report", str(benchmark), "--out", str(folder / "report"))
    assert written.returncode == 0, written.stderr[-2000:]
    return folder / "report"


def test_the_examples_regression_report_is_at_most_4000_px_tall_at_1600_px_wide(
    example_regression,
):
    """Measured as scripts/report_screenshot.py --measure measures it (it was 11,072 px)."""
    done = subprocess.run(
        [sys.executable, str(SCREENSHOT), str(example_regression), "--measure"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r": ([\d,]+) px tall at 1,600 px wide", done.stdout)
    assert found, done.stdout
    assert int(found.group(1).replace(",", "")) <= 4000
    # the flagged cases' runs folded: three identical runs on each side, shown once each
    html = (example_regression / "report.html").read_text()
    assert html.count('<span class="times">×3</span>') >= 4
