#!/usr/bin/env python3
"""Screenshot a page of the built documentation site with headless Chromium.

    .venv/bin/mkdocs build --strict
    .venv/bin/python scripts/site_screenshot.py site docs/images/site_home.png [--page index.html]

The site builds for reading from disk (``use_directory_urls: false``, no web fonts, no
script from a CDN), so Chromium opens it as a file with networking off: the picture also
shows that nothing the page needs comes from the network. It needs /usr/bin/chromium
(scripts/install_chromium.sh).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from report_screenshot import CHROMIUM, chromium_screenshot  # beside this script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build writes ./site)")
    parser.add_argument("png", type=Path, help="the screenshot to write")
    parser.add_argument("--page", default="index.html", help="the page, inside the site")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1000)
    arguments = parser.parse_args()
    page = arguments.site / arguments.page
    if not page.is_file():
        print(f"no {arguments.page} in {arguments.site}: run mkdocs build first", file=sys.stderr)
        return 2
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: run scripts/install_chromium.sh", file=sys.stderr)
        return 2
    arguments.png.parent.mkdir(parents=True, exist_ok=True)
    chromium_screenshot(
        page.resolve().as_uri(),
        arguments.png,
        (arguments.width, arguments.height),
        "--disable-background-networking",
        "--virtual-time-budget=5000",  # Material's own scripts lay the page out after load
    )
    print(arguments.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
