"""`init`: a first, commented benchmark written for a workflow."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.dataset_commands import (
    MAX_GOLDENS,
    REDACT_HELP,
    drawn,
    none_drawn,
    progress,
)
from n8n_deepeval_pipeline.console.exits import (
    EXIT_ERROR,
    EXIT_N8N_UNREACHABLE,
    Refused,
    exit_codes_stated,
)


@exit_codes_stated("init")
@click.command()
@click.argument("workflow")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The benchmark file to write (default: <name>.benchmark.yaml here).",
)
@click.option(
    "--from-executions",
    is_flag=True,
    help="Draw the dataset from the workflow's successful executions (WORKFLOW is an id).",
)
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1))
@click.option("--redact", is_flag=True, help=REDACT_HELP)
@click.option(
    "--synthesize",
    type=click.IntRange(1, MAX_GOLDENS),
    metavar="N",
    help="A dataset of N goldens synthesized by DeepEval's Synthesizer with the judge "
    "(N8N_DEEPEVAL_JUDGE_*): conversations and a simulated user for a chat trigger or an "
    "agent with memory, single messages otherwise.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing benchmark file.")
def init(
    workflow: str,
    out: Path | None,
    from_executions: bool,
    limit: int,
    redact: bool,
    synthesize: int | None,
    force: bool,
) -> None:
    """Write a first, commented benchmark for WORKFLOW (an exported file, or an id in n8n).

    The start and end node, the dataset's columns and the metrics are read off the
    workflow; the file is validated once written.
    """
    from n8n_deepeval_pipeline.console.scaffold import (
        benchmark_name,
        write_benchmark,
        write_synthesized_benchmark,
    )
    from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nUnreachable
    from n8n_deepeval_pipeline.n8n_api.traffic_dataset import ExecutionQuery

    if synthesize and from_executions:
        raise click.UsageError("give at most one of --from-executions and --synthesize")
    if _names_a_file(workflow) and not Path(workflow).is_file():
        raise click.ClickException(f"{workflow}: no such workflow file")
    client = None if Path(workflow).is_file() else benchmarks.api_client()
    try:
        with client or nullcontext():
            source = _workflow_source(workflow, client, from_executions)
            name = benchmark_name(str(source.workflow.get("name") or ""))
            out = out or Path(f"{name}.benchmark.yaml")
            if out.exists() and not force:
                raise click.ClickException(f"{out} exists (--force overwrites it)")
            query = ExecutionQuery(workflow_id=workflow, limit=limit) if from_executions else None
            with settings.made_for_the_user(out.parent):
                if synthesize:
                    synthesizer = _synthesizer(source, workflow, synthesize)
                    written = write_synthesized_benchmark(source, out, synthesizer)
                else:
                    written = write_benchmark(source, out, client, query, progress, redact)
    except N8nUnreachable as error:
        raise Refused(str(error), EXIT_N8N_UNREACHABLE) from None
    except (N8nApiError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if written.drawn is not None and not written.drawn.rows:
        click.echo(none_drawn(written.drawn, query) + ": no row drawn", err=True)
    elif written.drawn is not None:
        click.echo(drawn(written.drawn, len(written.drawn.rows), str(written.dataset)), err=True)
    if written.example_row:
        click.echo(f"wrote one example row to {written.dataset}: replace it", err=True)
    click.echo(f"wrote {written.benchmark}")
    if written.simulation:
        click.echo(
            f"{written.benchmark}: conversational goldens, each played by a simulated user "
            "(the simulation section)",
            err=True,
        )
    try:
        _, report = benchmarks.check(written.benchmark)
    except BenchmarkConfigError as error:
        raise Refused(f"the written benchmark does not validate:\n{error}", EXIT_ERROR) from None
    click.echo(f"ok {written.benchmark}: {report.rows} rows · {len(report.metrics)} metrics")
    benchmarks.warn(written.benchmark, report.warnings)  # what `run` would say, said now


def _names_a_file(workflow: str) -> bool:
    """Whether WORKFLOW is written as a path: n8n's ids hold no separator and no suffix."""
    return any(separator in workflow for separator in ("/", "\\")) or "." in workflow


def _synthesizer(source: Any, workflow: str, count: int) -> Any:
    """What adds ``count`` goldens synthesized for ``source`` to a dataset file."""
    from n8n_deepeval_pipeline.console.dataset_commands import run_synthesis_command
    from n8n_deepeval_pipeline.synthesis.dataset import Material, Source, SynthesisOptions

    label = f"workflow file {source.file.name}" if source.file else f"workflow {workflow}"

    def synthesize(dataset: Path, conversational: bool) -> str:
        options = SynthesisOptions(count=count, conversational=conversational)
        found = Source(source.workflow, label)
        made = run_synthesis_command(found, Material(), options, dataset, None)
        kind = "conversational golden(s)" if conversational else "golden(s)"
        return f"{len(made.rows.rows)} {kind} synthesized: review them"

    return synthesize


def _workflow_source(workflow: str, client: Any, from_executions: bool) -> Any:
    """The workflow from a file, or from n8n by its id."""
    from n8n_deepeval_pipeline.console.scaffold import WorkflowSource
    from n8n_deepeval_pipeline.workflow.file import read_workflow
    from n8n_deepeval_pipeline.workflow.hashing import extract_workflow

    if client is None:
        if from_executions:
            raise click.UsageError("--from-executions reads n8n: give the workflow's id")
        return WorkflowSource(read_workflow(Path(workflow)), file=Path(workflow))
    found = dict(extract_workflow(client.workflow(workflow)))
    return WorkflowSource(found, workflow_id=workflow)
