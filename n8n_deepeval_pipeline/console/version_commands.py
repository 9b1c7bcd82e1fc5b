"""`compare` and `report`: two stored versions side by side, and a version's report files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_COMPARE_FAILED,
    Refused,
    exit_codes_stated,
    storage_faults_refused,
)


@exit_codes_stated("compare")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.option("--baseline", help="Baseline version (hash or prefix); default: the one before.")
@click.option("--candidate", help="Candidate version (hash or prefix); default: the current.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "--variants",
    is_flag=True,
    help="The workflow and its variants side by side (the candidate's, default the current "
    "workflow's): pass rate, scores, the workflow's tokens, cost and latency, head-to-head "
    "win rates, each variant's cases against the base, and the cost/pass-rate frontier. "
    "Nothing is flagged: a variant is an alternative, not an edit.",
)
@storage_faults_refused
def compare(
    file: Path, baseline: str | None, candidate: str | None, as_json: bool, variants: bool
) -> None:
    """Compare two versions of benchmark FILE, case by case."""
    from n8n_deepeval_pipeline.console.comparison import comparison_json, render_comparison
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    if variants:
        if baseline is not None:
            raise Refused(
                "--variants compares each variant with its base: no --baseline", EXIT_COMPARE_FAILED
            )
        _compare_variants(file, candidate, as_json)
        return
    try:
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            before, after = runner.versions_to_compare(baseline, candidate)
            stored = runner.stored_versions([before, after])
            comparison = stored.compare(before, after)
            outcome = runner.outcome(after, baseline=before)
            scenarios = runner.scenarios(after)
    except (BenchmarkConfigError, UnknownVersionError) as error:
        raise Refused(str(error), EXIT_COMPARE_FAILED) from None
    placeholders = {score.metric for score in stored.scores if score.dry_run}
    if as_json:
        printed = comparison_json(comparison, before, after, outcome, placeholders)
        click.echo(json.dumps(printed, indent=2))
    else:
        click.echo(render_comparison(comparison, before, after, scenarios, placeholders))
    gate = outcome.gate
    if gate.flagged_cases:
        flagged = gate.flagged_cases
        click.echo(
            f"{len(flagged)} case(s) flagged {gate.fail_on} or worse: {', '.join(flagged)}",
            err=True,
        )
    deciding = next((found for found in outcome.findings if found.decides), None)
    if deciding is not None and deciding.kind != "regression":  # what `run` exits on besides
        click.echo(
            f"run exits {outcome.exit_codes.run} for {outcome.key}: {deciding.text}", err=True
        )
    sys.exit(outcome.exit_codes.compare)


def _compare_variants(file: Path, candidate: str | None, as_json: bool) -> None:
    """Print the matrix of the candidate's family (default: the current workflow's)."""
    from n8n_deepeval_pipeline.console.variant_table import (
        render_variant_matrix,
        variant_matrix_json,
    )
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    try:
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            matrix = runner.variant_matrix(runner.candidate_version(candidate))
    except (BenchmarkConfigError, UnknownVersionError) as error:
        raise Refused(str(error), EXIT_COMPARE_FAILED) from None
    if as_json:
        click.echo(json.dumps(variant_matrix_json(matrix), indent=2))
    else:
        click.echo(render_variant_matrix(matrix))


@exit_codes_stated("report")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.option("--hash", "version", help="The version (hash or prefix); default: the current.")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for report.html, eval-results.json and eval-pr-comment.md.",
)
@storage_faults_refused
def report(file: Path, version: str | None, out: Path) -> None:
    """Write the report of a version of benchmark FILE, compared with its baseline."""
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.report import write_report
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    try:
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            # private, as in the home: the files hold every answer (a folder there keeps its mode)
            written = write_report(runner.report(runner.candidate_version(version)), out)
    except (BenchmarkConfigError, UnknownVersionError) as error:
        raise Refused(str(error), EXIT_COMPARE_FAILED) from None
    for path in written.values():
        click.echo(str(path))
