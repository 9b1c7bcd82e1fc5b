"""The report's files: the HTML page, ``eval-results.json``, ``eval-pr-comment.md``.

And the images the page shows, beside it (``images/<sha256>.<ext>``).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.report.html import render_html
from n8n_deepeval_pipeline.report.markdown import pr_comment
from n8n_deepeval_pipeline.report.model import Report

HTML_FILE = "report.html"
RESULTS_FILE = "eval-results.json"
PR_COMMENT_FILE = "eval-pr-comment.md"


def results_json(report: Report) -> dict[str, Any]:
    """The report as plain JSON data; ``comparison`` is null without a baseline."""
    return report.model_dump(mode="json")


def write_report(report: Report, out_dir: Path) -> dict[str, Path]:
    """Write the three files into ``out_dir`` (created if needed); their paths by file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    contents = {
        HTML_FILE: render_html(report),
        RESULTS_FILE: json.dumps(results_json(report), indent=2, ensure_ascii=False) + "\n",
        PR_COMMENT_FILE: pr_comment(report),
    }
    paths = {}
    for name, text in contents.items():
        paths[name] = out_dir / name
        paths[name].write_text(text, encoding="utf-8")
    for image in report.images.values():
        if image.data_base64 is not None:
            file = out_dir / image.src
            file.parent.mkdir(exist_ok=True)
            file.write_bytes(base64.b64decode(image.data_base64))
    return paths
