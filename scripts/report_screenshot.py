#!/usr/bin/env python3
"""Screenshot a written report (OUT_DIR/report.html) with headless Chromium.

    scripts/report_screenshot.py OUT_DIR PNG [--height 2000]

The page loads nothing, so Chromium runs with networking off; it needs /usr/bin/chromium
(scripts/install_chromium.sh).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
WIDTH = 1280


def screenshot(page: Path, png: Path, height: int) -> None:
    """Render ``page`` at WIDTH × ``height`` pixels into ``png``."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",  # CI and containers run as root, where the sandbox cannot start
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={WIDTH},{height}",
                f"--screenshot={png.resolve()}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="a folder holding report.html")
    parser.add_argument("png", type=Path, help="the screenshot to write")
    parser.add_argument("--height", type=int, default=2000, help="pixels of the page to keep")
    arguments = parser.parse_args()
    page = arguments.out_dir / "report.html"
    if not page.is_file():
        print(f"no report.html in {arguments.out_dir}", file=sys.stderr)
        return 2
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: run scripts/install_chromium.sh", file=sys.stderr)
        return 2
    arguments.png.parent.mkdir(parents=True, exist_ok=True)
    screenshot(page, arguments.png, arguments.height)
    print(arguments.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
