"""The report's files: the HTML page, ``eval-results.json``, ``eval-pr-comment.md``.

And the images the page shows, beside it (``images/<sha256>.<ext>``). They hold every
answer and reason: they are written readable by their owner only, and the texts without
any configured secret, wherever they are written (the home, ``report --out``).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.redaction import configured_secrets, redact_values
from n8n_deepeval_pipeline.report.html import render_html
from n8n_deepeval_pipeline.report.markdown import pr_comment
from n8n_deepeval_pipeline.report.model import Report
from n8n_deepeval_pipeline.settings import PRIVATE_FILE_MODE, private_dir

HTML_FILE = "report.html"
RESULTS_FILE = "eval-results.json"
PR_COMMENT_FILE = "eval-pr-comment.md"


def results_json(report: Report) -> dict[str, Any]:
    """The report as plain JSON data; ``comparison`` is null without a baseline."""
    return report.model_dump(mode="json")


def write_report(report: Report, out_dir: Path) -> dict[str, Path]:
    """Write the three files and the images into ``out_dir`` (made if needed); the files' paths."""
    private_dir(out_dir)
    contents = {
        HTML_FILE: render_html(report),
        RESULTS_FILE: json.dumps(results_json(report), indent=2, ensure_ascii=False) + "\n",
        PR_COMMENT_FILE: pr_comment(report),
    }
    secrets = configured_secrets()
    paths = {}
    for name, text in contents.items():
        paths[name] = out_dir / name
        _write_private(paths[name], redact_values(text, secrets).encode("utf-8"))
    for image in report.images.values():
        if image.data_base64 is not None:
            file = out_dir / image.src
            private_dir(file.parent)
            _write_private(file, base64.b64decode(image.data_base64))
    return paths


def _write_private(path: Path, data: bytes) -> None:
    """``data`` into ``path``, readable by its owner only (a file written before too)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    os.fchmod(descriptor, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
