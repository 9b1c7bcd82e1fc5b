"""The report of one workflow version: an HTML page, ``eval-results.json`` and a PR comment.

Built from the version's stored tables and, when there is a baseline, the comparison
with it; nothing here knows about Dagster.
"""

from n8n_deepeval_pipeline.report.build import build_report
from n8n_deepeval_pipeline.report.files import results_json, write_report
from n8n_deepeval_pipeline.report.html import render_html
from n8n_deepeval_pipeline.report.markdown import pr_comment
from n8n_deepeval_pipeline.report.model import Report
from n8n_deepeval_pipeline.report.version_report import ReportOnlyTables, version_report

__all__ = [
    "Report",
    "ReportOnlyTables",
    "build_report",
    "pr_comment",
    "render_html",
    "results_json",
    "version_report",
    "write_report",
]
