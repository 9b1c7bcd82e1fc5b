"""The report page in a real browser: headless Chromium renders it and shows the headline.

Skipped without /usr/bin/chromium unless N8N_DEEPEVAL_REQUIRE_CHROMIUM=1 (CI sets it and
installs Chromium with scripts/install_chromium.sh).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.report import write_report
from tests.report.png import distinct_colours, read_png, tallest_line
from tests.report.sample import sample_report

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


def test_the_screenshot_is_a_full_size_picture_of_the_page(page, tmp_path):
    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile", f"--screenshot={shot}", page.as_uri())
    png = read_png(shot)
    assert (png.width, png.height) == (WIDTH, HEIGHT)
    # A blank or failed page has one or two colours; text, badges and charts have hundreds.
    assert distinct_colours(png) > 100


PASS_BORDER, FAIL_BORDER = (0x16, 0xA3, 0x4A), (0xDC, 0x26, 0x26)  # report.css .run borders


def test_a_flagged_case_shows_the_baseline_left_of_the_candidate(page, tmp_path):
    """refund: the baseline's four passing runs beside the candidate's four failing ones."""
    shot = tmp_path / "refund.png"
    done = subprocess.run(
        [sys.executable, str(SCREENSHOT), str(page.parent), str(shot), "--case", "refund"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    png = read_png(shot)
    left, right = range(png.width // 2), range(png.width // 2, png.width)
    # Each side's runs carry a 4-pixel border down their left edge: green passes, red fails.
    # Folded, the baseline's four runs stand about 30 pixels each; open, the candidate's
    # are each taller than a table of three metrics.
    assert tallest_line(png, PASS_BORDER, left) > 100
    assert tallest_line(png, FAIL_BORDER, right) > 400
    assert tallest_line(png, FAIL_BORDER, left) < 40  # the regression badge at most
    assert tallest_line(png, PASS_BORDER, right) < 40
