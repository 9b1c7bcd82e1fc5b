"""`dataset`: datasets drawn from what a workflow has been asked, or synthesized for it."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_INCOMPLETE,
    EXIT_INVALID_CONFIG,
    EXIT_N8N_UNREACHABLE,
    EXIT_RUN_FAILED,
    Refused,
    exit_codes_stated,
)

# Goldens one synthesis may ask for (a judge call or more each): far more than a dataset a
# person reviews, far fewer than a typo's 1000000000.
MAX_GOLDENS = 1000
REDACT_HELP = (
    "Take credentials, e-mails and phone numbers out of the executions' rows, and out of "
    "the rows the --out file holds already (it is rewritten); a Data Table holding rows "
    "with them is refused."
)


@click.group()
def dataset() -> None:
    """Datasets drawn from what a workflow has been asked, or synthesized for it."""


@exit_codes_stated("dataset from-executions")
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


# ---- dataset synthesize ----------------------------------------------------------------------

WITH_EXPECTED_WARNING = (
    "warning: --with-expected-output fills expectedOutput (a conversation's expectedOutcome) "
    "with the judge's answers: a judge's answer is not ground truth; review them before "
    "scoring against them"
)
EXISTING = click.Path(exists=True, dir_okay=False, path_type=Path)


@exit_codes_stated("dataset synthesize")
@dataset.command("synthesize")
@click.argument("source")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="A .jsonl file.")
@click.option("--data-table", help="An n8n Data Table (by name or id; created when missing).")
@click.option("--from-contexts", type=EXISTING, help="A JSONL file: one list of passages a line.")
@click.option(
    "--from-docs",
    type=EXISTING,
    multiple=True,
    help="A document (.txt, .md, .pdf, .docx) to draw passages from; repeat for more. "
    "Needs an embedding model (--embedder) and the `documents` extra.",
)
@click.option(
    "--from-dataset", type=EXISTING, help="Vary the rows of a dataset file (JSONL, CSV, Parquet)."
)
@click.option(
    "--conversational",
    is_flag=True,
    help="Write conversational goldens (scenario, expectedOutcome, userDescription) for a "
    "benchmark's simulation.",
)
@click.option(
    "--count",
    type=click.IntRange(1, MAX_GOLDENS),
    help="From scratch: how many goldens to ask for (default 10); from contexts, documents "
    f"or rows: how many per context or row (default 2, DeepEval's); at most {MAX_GOLDENS}.",
)
@click.option(
    "--evolution",
    "evolutions",
    multiple=True,
    metavar="NAME[=WEIGHT]",
    help="An evolution DeepEval may apply (reasoning, multi-context, concretizing, "
    "constrained, comparative, hypothetical, in-breadth); repeat for more. Default: all, "
    "equally likely.",
)
@click.option(
    "--evolutions",
    "num_evolutions",
    default=1,
    show_default=True,
    type=click.IntRange(0, 10),
    help="Evolutions applied to each input, one after another (at most 10).",
)
@click.option(
    "--quality-threshold",
    default=0.5,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="The filter rewrites an input the critic scores below this.",
)
@click.option(
    "--quality-retries",
    default=3,
    show_default=True,
    type=click.IntRange(1, 10),
    help="Times the filter scores (and rewrites) an input at most (10 at most).",
)
@click.option(
    "--with-expected-output",
    is_flag=True,
    help="Let the judge write expectedOutput (expectedOutcome): not ground truth.",
)
@click.option("--scenario", help="Instead of the scenario read off the workflow.")
@click.option("--task", help="Instead of the task read off the workflow.")
@click.option("--input-format", help="Instead of the input format read off the workflow.")
@click.option("--embedder", metavar="MODEL", help="The embedding model of --from-docs.")
@click.option("--seed", type=int, help="Seed DeepEval's draw of evolutions.")
@click.option("--no-cache", is_flag=True, help="Ask the judge again instead of reusing answers.")
def synthesize(
    source: str,
    out: Path | None,
    data_table: str | None,
    from_contexts: Path | None,
    from_docs: tuple[Path, ...],
    from_dataset: Path | None,
    conversational: bool,
    count: int | None,
    evolutions: tuple[str, ...],
    num_evolutions: int,
    quality_threshold: float,
    quality_retries: int,
    with_expected_output: bool,
    scenario: str | None,
    task: str | None,
    input_format: str | None,
    embedder: str | None,
    seed: int | None,
    no_cache: bool,
) -> None:
    """Add goldens synthesized by DeepEval's Synthesizer for SOURCE to a dataset.

    SOURCE: a workflow id in n8n, an exported workflow file, or a benchmark file (its
    workflow and its judge). From scratch unless --from-contexts, --from-docs or
    --from-dataset; styled by what the workflow shows (its agent's system message, tools
    and trigger). Every row says it is synthetic and where it came from; its id is a
    hash of its input, so a second synthesis adds only new rows.
    """
    from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nUnreachable
    from n8n_deepeval_pipeline.synthesis.dataset import Material, SynthesisOptions, read_source
    from n8n_deepeval_pipeline.synthesis.request import parse_evolution

    if (out is None) == (data_table is None):
        raise click.UsageError("give exactly one of --out FILE or --data-table NAME")
    if out is not None and out.suffix.lower() not in (".jsonl", ".ndjson"):
        # Said before the judge is paid, not when the rows are written.
        raise click.BadParameter(
            "rows are written as JSON lines: a .jsonl file", param_hint="--out"
        )
    try:
        chosen = dict(parse_evolution(text) for text in evolutions)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--evolution") from None
    if with_expected_output:
        click.echo(WITH_EXPECTED_WARNING, err=True)
    options = SynthesisOptions(
        count=count,
        conversational=conversational,
        evolutions=chosen,
        num_evolutions=num_evolutions,
        quality_threshold=quality_threshold,
        quality_retries=quality_retries,
        with_expected_output=with_expected_output,
        styling={"scenario": scenario, "task": task, "input_format": input_format},
        embedder=embedder,
        random_seed=seed,
        cache=not no_cache,
    )
    try:
        found = read_source(source, benchmarks.api_client)
    except N8nUnreachable as error:
        raise Refused(str(error), EXIT_N8N_UNREACHABLE) from None
    except N8nApiError as error:
        raise click.ClickException(str(error)) from None
    except ValueError as error:  # a benchmark or workflow file that does not read
        raise Refused(str(error), EXIT_INVALID_CONFIG) from None
    material = Material(from_contexts, from_docs, from_dataset)
    run_synthesis_command(found, material, options, out, data_table)


def run_synthesis_command(
    found: Any, material: Any, options: Any, out: Path | None, data_table: str | None
) -> Any:
    """Plan, run and write a synthesis for ``found`` (a Source), saying what it did.

    Returns the Synthesized result; refuses (with the exit code of the kind of failure)
    when there is no row to write.
    """
    from n8n_deepeval_pipeline.n8n_api.client import N8nApiError
    from n8n_deepeval_pipeline.synthesis import dataset as synthesis

    try:
        planned = synthesis.plan(found, material, options)
    except ValueError as error:  # files (by line), options, the judge's settings
        raise Refused(str(error), EXIT_INVALID_CONFIG) from None
    request = planned.request
    click.echo(
        f"synthesizing {_what(request)} for {found.label} with {request.judge.label} …", err=True
    )
    made = synthesis.synthesize(planned, on_line=lambda line: click.echo(line, err=True))
    result, rows = made.result, made.rows
    spent = _judge_line(request.judge.label, result.usage, made.cost_usd)  # always the last line
    if result.error is not None:
        click.echo(spent)
        kind = result.error_kind or ""
        judge_failed = kind.startswith("judge_")  # the judge's failure, as a score's would be
        code = EXIT_INCOMPLETE if judge_failed else EXIT_RUN_FAILED if kind == "failed" else 0
        code = code or EXIT_INVALID_CONFIG
        raise Refused(result.error, code)
    where = str(out) if out is not None else f"Data Table {data_table!r}"
    if rows.rows:
        made_for_the_user = (
            settings.made_for_the_user(out.parent) if out else contextlib.nullcontext()
        )
        try:
            with made_for_the_user:
                added = synthesis.write_rows(rows.rows, out, data_table, benchmarks.api_client)
        except (N8nApiError, ValueError) as error:
            click.echo(spent)
            raise click.ClickException(str(error)) from None
        click.echo(_made(len(result.goldens), rows, added, where))
    click.echo(spent)
    if not rows.rows:
        raise click.ClickException("the synthesizer made no golden: nothing written")
    return made


def _what(request: Any) -> str:
    kind = "conversational goldens" if request.conversational else "goldens"
    if request.method == "scratch":
        return f"{request.count} {kind} from scratch"
    material = {"contexts": "context", "docs": "document context", "goldens": "row"}[request.method]
    return f"{kind} from {request.method} ({request.count} per {material})"


def _made(goldens: int, rows: Any, added: int, where: str) -> str:
    repeated = (
        f" ({rows.duplicates} repeated a golden: its input from its context)"
        if rows.duplicates
        else ""
    )
    kept = len(rows.rows)
    return (
        f"{goldens} golden(s) → {kept} row(s){repeated} · {added} new in {where}, "
        f"{kept - added} already there"
    )


def _judge_line(label: str, usage: Any, cost: float | None) -> str:
    money = "-" if cost is None else f"${cost:.4f}"
    return (
        f"judge {label} · calls {usage.calls} (+{usage.cached} cached, {usage.retries} retries)"
        f" · tokens {usage.tokens} · cost {money}"
    )
