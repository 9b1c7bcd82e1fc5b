"""The report's files: the HTML page, ``eval-results.json`` and ``eval-pr-comment.md``.

They hold every answer and reason: they are written readable by their owner only, and
without any configured secret, wherever they are written (the home, ``report --out``).
"""

from __future__ import annotations

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
    """Write the three files into ``out_dir`` (created if needed); their paths by file name."""
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
        descriptor = os.open(paths[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
        os.fchmod(descriptor, PRIVATE_FILE_MODE)  # a file written before keeps no wider mode
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(redact_values(text, secrets))
    return paths
