#!/usr/bin/env python3
"""Screenshot a written report (OUT_DIR/report.html) with headless Chromium, or measure it.

    scripts/report_screenshot.py OUT_DIR PNG [--height 2000] [--width 1280]
        [--case ROW_ID | --section ID]
    scripts/report_screenshot.py OUT_DIR --measure [--width 1600]

``--case`` pictures one case alone (a flagged one shows the baseline's runs beside the
candidate's), ``--section`` one section of the page (``variants``: the frontier chart and
the matrix of a workflow and its variants): a copy of the page, written next to the PNG,
hides everything else. ``--measure`` prints how tall the whole page is at ``--width``
pixels, as the browser lays it out (details open or folded as the page opens them). The
page loads nothing, so Chromium runs with networking off; it needs /usr/bin/chromium
(scripts/install_chromium.sh).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
WIDTH = 1280
MEASURE_WIDTH = 1600
# Written into a copy of the page: its height once laid out, where --dump-dom shows it.
_HEIGHT_PROBE = (
    "<script>addEventListener('load', () => document.body.setAttribute("
    "'data-page-height', document.documentElement.scrollHeight))</script>"
)


def _chromium(url: str, size: tuple[int, int], *flags: str, timeout_s: float = 120) -> str:
    """Headless Chromium on ``url`` in a ``size`` (width, height) window; its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
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
                url,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    return done.stdout


def chromium_screenshot(
    url: str, png: Path, size: tuple[int, int], *flags: str, timeout_s: float = 120
) -> None:
    """Render ``url`` in headless Chromium at ``size`` (width, height) pixels into ``png``."""
    _chromium(url, size, *flags, f"--screenshot={png.resolve()}", timeout_s=timeout_s)


def page_height(page: Path, width: int = MEASURE_WIDTH) -> int:
    """How many pixels tall ``page`` is, laid out ``width`` pixels wide."""
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / page.name
        html = page.read_text(encoding="utf-8")
        probe.write_text(html.replace("</body>", _HEIGHT_PROBE + "</body>", 1), encoding="utf-8")
        dom = _chromium(
            probe.as_uri(),
            (width, 1000),
            "--disable-background-networking",
            "--virtual-time-budget=5000",  # until the load event has run the probe
            "--dump-dom",
        )
    found = re.search(r'data-page-height="(\d+)"', dom)
    if found is None:
        raise RuntimeError(f"Chromium did not lay out {page}")
    return int(found.group(1))


def screenshot(page: Path, png: Path, height: int, width: int = WIDTH) -> None:
    """Render the report ``page`` at ``width`` × ``height`` pixels into ``png``."""
    chromium_screenshot(
        page.resolve().as_uri(), png, (width, height), "--disable-background-networking"
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
    parser.add_argument("png", type=Path, nargs="?", help="the screenshot to write")
    parser.add_argument("--height", type=int, default=2000, help="pixels of the page to keep")
    parser.add_argument(
        "--width", type=int, help=f"window width ({WIDTH}; --measure: {MEASURE_WIDTH})"
    )
    focus = parser.add_mutually_exclusive_group()
    focus.add_argument("--case", help="picture only this case (its row id)")
    focus.add_argument("--section", help="picture only this section (its id, e.g. variants)")
    parser.add_argument("--measure", action="store_true", help="print the page's full height")
    arguments = parser.parse_args()
    page = arguments.out_dir / "report.html"
    if not page.is_file():
        print(f"no report.html in {arguments.out_dir}", file=sys.stderr)
        return 2
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: run scripts/install_chromium.sh", file=sys.stderr)
        return 2
    if arguments.measure:
        width = arguments.width or MEASURE_WIDTH
        print(f"{page}: {page_height(page, width):,} px tall at {width:,} px wide")
    if arguments.png is None:
        if not arguments.measure:
            parser.error("give a PNG to write, or --measure")
        return 0
    arguments.png.parent.mkdir(parents=True, exist_ok=True)
    if arguments.case is not None:
        page = focus_on_case(page, arguments.case, arguments.png.with_suffix(".html"))
    if arguments.section is not None:
        page = focus_on_section(page, arguments.section, arguments.png.with_suffix(".html"))
    screenshot(page, arguments.png, arguments.height, arguments.width or WIDTH)
    print(arguments.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
