"""`dataset`: datasets drawn from what a workflow has already been asked."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import EXIT_N8N_UNREACHABLE, Refused

REDACT_HELP = (
    "Take credentials, e-mails and phone numbers out of the executions' rows, and out of "
    "the rows the --out file holds already (it is rewritten); a Data Table holding rows "
    "with them is refused."
)


@click.group()
def dataset() -> None:
    """Datasets drawn from what a workflow has already been asked."""


@dataset.command("from-executions")
@click.argument("workflow_id")
@click.option("--since", help="Only executions started after this: 30m, 24h, 7d or an ISO date.")
@click.option(
    "--limit",
    default=100,
    show_default=True,
    type=click.IntRange(1),
    help="Newest executions read.",
)
@click.option(
    "--status",
    default="success",
    show_default=True,
    type=click.Choice(["success", "error", "canceled", "all"]),
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="A .jsonl file.")
@click.option("--data-table", help="An n8n Data Table (by name or id; created when missing).")
@click.option(
    "--expected-from-output",
    is_flag=True,
    help="Fill expectedOutput and expectedTools from what the workflow answered.",
)
@click.option("--redact", is_flag=True, help=REDACT_HELP)
@click.option(
    "--include-manual", is_flag=True, help="Also the executions started by hand in the editor."
)
def from_executions(
    workflow_id: str,
    since: str | None,
    limit: int,
    status: str,
    out: Path | None,
    data_table: str | None,
    expected_from_output: bool,
    redact: bool,
    include_manual: bool,
) -> None:
    """Add the executions of WORKFLOW_ID in n8n to a dataset.

    A row per execution, or per chat session for a chat-triggered agent; a row's id is a
    hash of its input, so rows already there are not added again.
    """
    from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nUnreachable
    from n8n_deepeval_pipeline.n8n_api.traffic_dataset import ExecutionQuery, draw_dataset

    if (out is None) == (data_table is None):
        raise click.UsageError("give exactly one of --out FILE or --data-table NAME")
    if expected_from_output:
        click.echo(SELF_CONSISTENCY_WARNING, err=True)
    query = ExecutionQuery(
        workflow_id=workflow_id,
        since=_since(since),
        limit=limit,
        status=status,
        include_manual=include_manual,
    )
    try:
        made = settings.made_for_the_user(out.parent) if out else contextlib.nullcontext()
        with benchmarks.api_client() as client, made:
            draft, written = draw_dataset(
                client, query, out or str(data_table), expected_from_output, redact,
                progress,
            )  # fmt: skip
    except N8nUnreachable as error:
        raise Refused(str(error), EXIT_N8N_UNREACHABLE) from None
    except (N8nApiError, ValueError) as error:  # file and config errors are ValueErrors
        raise click.ClickException(str(error)) from None
    if not draft.rows:
        raise click.ClickException(none_drawn(draft, query) + ": nothing written")
    where = str(out or f"Data Table {data_table!r}")
    click.echo(drawn(draft, written.new, where, written.redacted))


SELF_CONSISTENCY_WARNING = (
    "warning: --expected-from-output makes the workflow's own answers the expected ones: "
    "scores against them measure self-consistency, not correctness; review them first"
)


def _since(text: str | None) -> Any:
    from datetime import UTC, datetime

    from n8n_deepeval_pipeline.n8n_api.traffic_dataset import since_from

    try:
        return None if text is None else since_from(text, datetime.now(UTC))
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--since") from None


def none_drawn(draft: Any, query: Any) -> str:
    """Why the executions gave no row, in the terms of the query."""
    since = f" since {query.since.isoformat()}" if query.since else ""
    matched = f"{draft.executions} executions matched (status {query.status}{since})"
    return matched if not draft.executions else f"{matched}, none with an input to replay"


def drawn(draft: Any, added: int, where: str, redacted: int = 0) -> str:
    """What the executions gave: rows, what was left out, how many were new where.

    ``redacted``: rows the destination held already that ``--redact`` rewrote.
    """
    left_out = [
        f"{draft.duplicates} duplicate(s)" if draft.duplicates else "",
        f"{draft.without_input} without an input" if draft.without_input else "",
    ]
    note = "; ".join(part for part in left_out if part)
    rewritten = f" · {redacted} rows already there redacted" if redacted else ""
    return (
        f"{draft.executions} executions → {len(draft.rows)} rows{f' ({note})' if note else ''}"
        f" · {added} new in {where}, {len(draft.rows) - added} already there{rewritten}"
    )


def progress(read: int) -> None:
    """Say how many executions have been read so far."""
    click.echo(f"read {read} executions …", err=True)
