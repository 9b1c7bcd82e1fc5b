"""`validate`, `hash`, `schema` and `metrics`: what a benchmark file and the catalog hold."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_ERROR,
    exit_codes_stated,
    n8n_unreachable_refused,
)
from n8n_deepeval_pipeline.workflow.hashing import (
    WorkflowShapeError,
    extract_workflow,
    workflow_hash,
)


@exit_codes_stated("validate")
@click.command()
@click.argument("files", nargs=-1, required=True, type=benchmarks.EXISTING_FILE)
@n8n_unreachable_refused
def validate(files: tuple[Path, ...]) -> None:
    """Check benchmark FILES and the workflow, dataset and outputs they point to."""
    failed = False
    for path in files:
        try:
            _, report = benchmarks.check(path)
        except BenchmarkConfigError as error:
            click.echo(str(error), err=True)
            failed = True
            continue
        click.echo(
            f"ok {path}: {report.benchmark} · workflow {report.workflow_hash[:12]} · "
            f"{report.rows} rows · {report.runs} runs · {len(report.metrics)} metrics"
        )
        benchmarks.warn(path, report.warnings)
    sys.exit(EXIT_ERROR if failed else 0)


@click.command("hash")
@click.argument("source", type=click.File("r", encoding="utf-8"))
def hash_command(source: Any) -> None:
    """Print the workflowHash of an exported workflow or an n8n API response (- for stdin)."""
    try:
        document = json.load(source)
        click.echo(workflow_hash(extract_workflow(document)))
    except json.JSONDecodeError as error:
        raise click.ClickException(f"{source.name}: line {error.lineno}: {error.msg}") from None
    except WorkflowShapeError as error:
        raise click.ClickException(f"{source.name}: {error}") from None


@click.command()
def schema() -> None:
    """Print the JSON schema of benchmark files (for editors: yaml-language-server)."""
    from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema

    click.echo(json.dumps(benchmark_json_schema(), indent=2))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def metrics(as_json: bool) -> None:
    """List the metrics a benchmark can use, and DeepEval's that it leaves out (why)."""
    from n8n_deepeval_pipeline.config.model import StatedDefaults
    from n8n_deepeval_pipeline.metrics.catalog import CATALOG
    from n8n_deepeval_pipeline.metrics.left_out import LEFT_OUT

    if as_json:
        catalog = [
            {
                "slug": entry.slug,
                "name": entry.name,
                "category": entry.category,
                "direction": entry.direction,
                "needs": {
                    "judge": entry.needs_judge,
                    "trace": entry.needs_trace,
                    "turns": entry.needs_turns,
                },
                "requiredFields": list(entry.required_fields),
                "implementation": entry.implementation,
                "config": entry.config_model.model_json_schema(
                    by_alias=True, schema_generator=StatedDefaults
                ),
            }
            for entry in CATALOG.values()
        ]
        left_out = [left.model_dump() for left in LEFT_OUT]
        click.echo(json.dumps({"metrics": catalog, "leftOut": left_out}, indent=2))
        return
    rows = [("slug", "metric", "category", "direction", "judge")] + [
        (
            entry.slug,
            entry.name,
            entry.category,
            entry.direction,
            "yes" if entry.needs_judge else "no",
        )
        for entry in CATALOG.values()
    ]
    click.echo("\n".join(_aligned(rows)))
    click.echo(f"\nleft out: {len(LEFT_OUT)} of DeepEval's metrics (--json says why)")
    for left in LEFT_OUT:
        click.echo(f"  {left.implementation.rpartition('.')[2]}")


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """The rows as columns as wide as their widest cell, two spaces apart."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
