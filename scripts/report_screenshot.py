#!/usr/bin/env python3
"""Screenshot a written report (OUT_DIR/report.html) with headless Chromium.

    scripts/report_screenshot.py OUT_DIR PNG [--height 2000] [--case ROW_ID | --section ID]

``--case`` pictures one case alone (a flagged one shows the baseline's runs beside the
candidate's), ``--section`` one section of the page (``variants``: the frontier chart and
the matrix of a workflow and its variants): a copy of the page, written next to the PNG,
hides everything else.
The page loads nothing, so Chromium runs with networking off; it needs /usr/bin/chromium
(scripts/install_chromium.sh).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
WIDTH = 1280


def chromium_screenshot(
    url: str, png: Path, size: tuple[int, int], *flags: str, timeout_s: float = 120
) -> None:
    """Render ``url`` in headless Chromium at ``size`` (width, height) pixels into ``png``."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",  # CI and containers run as root, where the sandbox cannot start
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                *flags,
                f"--screenshot={png.resolve()}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=timeout_s,
        )


def screenshot(page: Path, png: Path, height: int) -> None:
    """Render the report ``page`` at WIDTH × ``height`` pixels into ``png``."""
    chromium_screenshot(
        page.resolve().as_uri(), png, (WIDTH, height), "--disable-background-networking"
    )


def focus_on_case(page: Path, row_id: str, copy: Path) -> Path:
    """A copy of ``page`` that shows only the case ``row_id``, opened; the copy's path."""
    html = page.read_text(encoding="utf-8")
    anchor = f'id="case-{row_id}"'
    if anchor not in html:
        raise SystemExit(f"{page} has no case {row_id!r}")
    # A CSS string in JSON's quoting is a valid CSS string: the id needs no escaping by hand.
    selector = f"details.case[id={json.dumps('case-' + row_id)}]"
    style = (
        "<style>main > *:not(#cases), #cases > :not(details), "
        f"details.case:not({selector}) {{ display: none; }}</style>"
    )
    focused = html.replace(anchor, anchor + " open", 1).replace("</head>", style + "</head>", 1)
    copy.write_text(focused, encoding="utf-8")
    return copy


def focus_on_section(page: Path, section: str, copy: Path) -> Path:
    """A copy of ``page`` that shows only its section ``section`` (by id); the copy's path."""
    html = page.read_text(encoding="utf-8")
    if f'<section id="{section}">' not in html:
        raise SystemExit(f"{page} has no section {section!r}")
    selector = f"section[id={json.dumps(section)}]"
    style = f"<style>main > *:not({selector}) {{ display: none; }}</style>"
    copy.write_text(html.replace("</head>", style + "</head>", 1), encoding="utf-8")
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="a folder holding report.html")
    parser.add_argument("png", type=Path, help="the screenshot to write")
    parser.add_argument("--height", type=int, default=2000, help="pixels of the page to keep")
    focus = parser.add_mutually_exclusive_group()
    focus.add_argument("--case", help="picture only this case (its row id)")
    focus.add_argument("--section", help="picture only this section (its id, e.g. variants)")
    arguments = parser.parse_args()
    page = arguments.out_dir / "report.html"
    if not page.is_file():
        print(f"no report.html in {arguments.out_dir}", file=sys.stderr)
        return 2
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: run scripts/install_chromium.sh", file=sys.stderr)
        return 2
    arguments.png.parent.mkdir(parents=True, exist_ok=True)
    if arguments.case is not None:
        page = focus_on_case(page, arguments.case, arguments.png.with_suffix(".html"))
    if arguments.section is not None:
        page = focus_on_section(page, arguments.section, arguments.png.with_suffix(".html"))
    screenshot(page, arguments.png, arguments.height)
    print(arguments.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
