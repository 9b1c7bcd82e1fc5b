"""The workflow checks' reference page, written from their catalog (``CHECKS``)."""

from __future__ import annotations

from markdown_text import code, table

from n8n_deepeval_pipeline.workflow.checks import CHECKS


def page() -> str:
    """The workflow checks' page."""
    rows = [(check.category, code(check.check_id), check.description) for check in CHECKS]
    return (
        "# Workflow checks\n\n"
        "Each version's workflow is also graded without a model, from its stored snapshot "
        "(the `workflow_checks` asset), so a re-score grades old versions too. The run "
        "summary ends with the checks, and the UI shows them as a table and a warning-only "
        "asset check: they never fail a run. A check that does not apply (no AI nodes, no "
        "trigger) is `not_applicable`; the bundled example fails one, its webhook has no "
        "authentication. This list is written from the checks' catalog "
        "(`workflow/checks.py`).\n\n"
        + table(["category", "check", "passes when"], rows)
        + "\nA credential found in a parameter is named by node and parameter path, never "
        "by its value.\n"
    )
