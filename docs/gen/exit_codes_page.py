"""The exit codes' reference page, written from the commands' own table (``EXIT_CODES``)."""

from __future__ import annotations

from markdown_text import code, table

from n8n_deepeval_pipeline.console.exits import ANY_COMMAND, EXIT_CODES, RUN_EXIT_LADDER


def exit_code_table() -> str:
    """The table of every exit code, by command: the README shows the same one."""
    rows = [
        (
            ", ".join(name if name == ANY_COMMAND else code(name) for name in row.commands),
            str(row.code),
            row.when,
        )
        for row in EXIT_CODES
    ]
    return table(["command", "code", "when"], rows)


def page() -> str:
    """The exit codes' page."""
    order = ", then ".join(str(code_) for code_ in RUN_EXIT_LADDER[:-1])
    return (
        "# Exit codes\n\n"
        "Every outcome of a command has its own exit code, so a CI job can tell a "
        "regression from a judge outage from a broken file. This table is written from "
        "the commands' own (`console/exits.py`), which their `--help` also shows.\n\n"
        + exit_code_table()
        + f"\n`run` checks its reasons in this order: {order}: the first a version has "
        "decides, and every other is still said on stderr (the deciding one on the last "
        "line). A workflow run with its variants exits with the most severe of its "
        "versions' codes; a variant's regression or breach against the workflow is said and "
        "fails nothing. `backfill` exits with the most severe of 8, 4 and 3 over its "
        "versions. `ci run` exits with the most severe of its benchmarks' codes in that "
        "order, a code off this table (a process killed by signal N: 128 + N) right after 2, "
        "and 4 at least for a benchmark whose `report` or `compare` step failed. Each "
        "version's report (`eval-results.json`'s `outcome`), `run --json` and "
        "`compare --json` carry the same outcome and exit codes, and the Dagster run of a "
        "version that would not exit 0 fails its `version_passes` check "
        "([the report, the gate and the UI](../guides/report-and-ui.md)). Errored runs (a "
        "failed workflow call) have no overall score: the headline's mean overall score "
        "leaves them out and says how many, while they count as failed in the pass rate.\n\n"
        "A full disk or a corrupt database is said in one line: `no space left under "
        "<folder>` (the rows stored before are kept: a partition is replaced in one "
        "transaction) or `<file>: the database is corrupt or truncated: move it aside …`.\n\n"
        "[CI gating](../guides/ci-gating.md) shows them at work.\n"
    )
