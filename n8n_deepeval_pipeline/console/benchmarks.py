"""A benchmark file checked, its runner, and the n8n the environment names: what commands share."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
verbose_option = click.option(
    "--verbose", is_flag=True, help="Show Dagster's log (without: only progress and errors)."
)


def check(path: Path, for_run: bool = False) -> Any:
    """Validate a benchmark; what lives in n8n is read with the environment's API key.

    ``for_run``: what the run needs (n8n for a harness copy or a sink) is refused here, in
    one line, rather than by a failed step: an n8n that does not answer is said (exit 8)
    before any run, variant or red team starts.
    """
    from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
    from n8n_deepeval_pipeline.console.validation import check_benchmark
    from n8n_deepeval_pipeline.n8n_api.client import client_from_environment

    client = client_from_environment()  # not the Dagster resource: validate starts fast
    if client is None:
        return check_benchmark(path, for_run=for_run)
    with client:
        checked = check_benchmark(path, client, for_run)
        benchmark = checked[0]
        if for_run and (isinstance(benchmark.target, WorkflowTarget) or benchmark.sink):
            client.check_answers()
        return checked


def warn(path: Path, warnings: Sequence[str]) -> None:
    """Say on stderr what in benchmark ``path`` is valid but will not do what it seems to ask."""
    for warning in warnings:
        click.echo(f"{path}: warning: {warning}", err=True)


def runner(
    path: Path,
    instance: Any,
    judge_cache: bool = True,
    selection: Any = None,
    benchmark: Any = None,
) -> Any:
    """A runner of benchmark FILE, validated here unless the caller passes it validated."""
    from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner

    if benchmark is None:
        benchmark, _ = check(path)
    return BenchmarkRunner(benchmark, path, instance, judge_cache, selection)


def api_client() -> Any:
    """The n8n the environment names; a command that needs one refuses to run without it.

    The refusal names the variables that are not set, and only those.
    """
    import os

    from n8n_deepeval_pipeline.n8n_api.client import (
        API_KEY_ENV,
        API_URL_ENV,
        client_from_environment,
    )

    client = client_from_environment()
    if client is None:
        unset = [name for name in (API_URL_ENV, API_KEY_ENV) if not os.environ.get(name)]
        raise click.ClickException(f"set {' and '.join(unset)} to read from n8n")
    return client
