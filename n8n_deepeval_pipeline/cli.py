"""``n8n-deepeval``: validate, hash, run, backfill and browse benchmarks from a terminal."""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.workflow.hashing import (
    WorkflowShapeError,
    extract_workflow,
    workflow_hash,
)

if TYPE_CHECKING:  # the summary imports SciPy: only the commands that print one load it
    from n8n_deepeval_pipeline.console.run_summary import BenchmarkSummary, ErrorSummary

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)

# Exit codes of `run`, one per way it can disappoint, for CI scripts.
EXIT_BELOW_FAIL_UNDER = 1
EXIT_INVALID_CONFIG = 2
EXIT_INCOMPLETE = 3
EXIT_RUN_FAILED = 4  # also any command's storage failing: a full disk, a corrupt database
EXIT_RUN_REGRESSION = 5
# …and of `compare`.
EXIT_REGRESSION = 1
EXIT_COMPARE_FAILED = 2
_REDACT_HELP = "Take credentials, e-mails and phone numbers out of the executions' rows."
_verbose = click.option(
    "--verbose", is_flag=True, help="Show Dagster's log (without: only progress and errors)."
)


class _Refused(click.ClickException):
    """A ClickException with its own exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _storage_fault(messages: Sequence[str]) -> str | None:
    """The one line for a full disk or a corrupt database behind these errors, if so."""
    from n8n_deepeval_pipeline.storage_faults import storage_fault

    # Named in this order: the home holds everything unless a variable moves a part.
    folders = [
        settings.home(),
        settings.database_path().parent,
        settings.dagster_home(),
        settings.judge_state_dir(),
    ]
    return storage_fault(messages, settings.database_path(), list(dict.fromkeys(folders)))


def _storage_faults_refused(command: Callable[..., None]) -> Callable[..., None]:
    """A command that says a storage fault in one line and exits 4, without a traceback."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> None:
        from n8n_deepeval_pipeline.storage_faults import error_messages

        try:
            command(*args, **kwargs)
            return
        except click.ClickException:
            raise  # the command has already said what went wrong, with its exit code
        except Exception as error:
            fault = _storage_fault(error_messages(error))
            if fault is None:
                raise
        # Raised out here, so that the failed frames (and Dagster's open resources) are
        # released now rather than at interpreter exit.
        raise _Refused(fault, EXIT_RUN_FAILED)

    return guarded


@click.group()
def main() -> None:
    """Benchmark n8n AI workflows with DeepEval, orchestrated by Dagster."""


def entry(args: Sequence[str] | None = None) -> None:
    """The console script: the CLI, then its exit without the interpreter's teardown.

    Freeing every object of Dagster, pandas and DuckDB took ~1.5 s after a command had
    said all it had to say. The exit handlers still run and the streams are flushed;
    while a thread still runs, the exit is Python's own.
    """
    try:
        main(args, prog_name="n8n-deepeval")
        code = 0
    except SystemExit as done:
        code = _exit_code(done)
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_code(done: SystemExit) -> int:
    """The process's exit code for ``done`` (a message is printed, as Python would)."""
    if done.code is None or isinstance(done.code, int):
        return done.code or 0
    print(done.code, file=sys.stderr)
    return 1


@main.command()
@click.argument("files", nargs=-1, required=True, type=_FILE)
def validate(files: tuple[Path, ...]) -> None:
    """Check benchmark FILES and the workflow, dataset and outputs they point to."""
    failed = False
    for path in files:
        try:
            _, report = _check(path)
        except BenchmarkConfigError as error:
            click.echo(str(error), err=True)
            failed = True
            continue
        click.echo(
            f"ok {path}: {report.benchmark} · workflow {report.workflow_hash[:12]} · "
            f"{report.rows} rows · {report.runs} runs · {len(report.metrics)} metrics"
        )
        _warn(path, report.warnings)
    sys.exit(1 if failed else 0)


def _warn(path: Path, warnings: Sequence[str]) -> None:
    """Say on stderr what in benchmark ``path`` is valid but will not do what it seems to ask."""
    for warning in warnings:
        click.echo(f"{path}: warning: {warning}", err=True)


@main.command("hash")
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


@main.command()
def schema() -> None:
    """Print the JSON schema of benchmark files (for editors: yaml-language-server)."""
    from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema

    click.echo(json.dumps(benchmark_json_schema(), indent=2))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def metrics(as_json: bool) -> None:
    """List the metrics a benchmark can use."""
    from n8n_deepeval_pipeline.metrics.catalog import CATALOG

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
                "config": entry.config_model.model_json_schema(by_alias=True),
            }
            for entry in CATALOG.values()
        ]
        click.echo(json.dumps(catalog, indent=2))
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


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """The rows as columns as wide as their widest cell, two spaces apart."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _check(path: Path, for_run: bool = False) -> Any:
    """Validate a benchmark; what lives in n8n is read with the environment's API key.

    ``for_run``: what the run needs (n8n for a harness copy) is refused here, in one line,
    rather than by a failed step.
    """
    from n8n_deepeval_pipeline.console.validation import check_benchmark
    from n8n_deepeval_pipeline.n8n_api.client import client_from_environment

    client = client_from_environment()  # not the Dagster resource: validate starts fast
    if client is None:
        return check_benchmark(path, for_run=for_run)
    with client:
        return check_benchmark(path, client, for_run)


def _runner(
    path: Path,
    instance: Any,
    judge_cache: bool = True,
    selection: Any = None,
    benchmark: Any = None,
) -> Any:
    """A runner of benchmark FILE, validated here unless the caller passes it validated."""
    from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner

    if benchmark is None:
        benchmark, _ = _check(path)
    return BenchmarkRunner(benchmark, path, instance, judge_cache, selection)


def _workers_warming(wanted: bool) -> AbstractContextManager[None]:
    """The worker pool's zygote warming beside the run's start-up, if its steps run here.

    Its DeepEval imports take seconds; started first, they overlap the checks and the
    Dagster imports on another CPU, and the scoring step finds it ready.
    """
    if not (wanted and settings.steps_run_in_this_process()):
        return nullcontext()
    from n8n_deepeval_pipeline.worker.pool import warm_ahead

    settings.point_at_homes()  # as the run's instance does: the pool's environment matches
    return warm_ahead()


def _instance_for(path: Path, report: Any, selection: Any) -> Any:
    """The shared local instance, or a throwaway one for a trial of a few rows."""
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance, trial_instance

    if selection is None:
        return local_instance()
    try:
        selection.check(report.row_ids)
    except ValueError as error:
        raise _Refused(f"{path}: {error}", EXIT_INVALID_CONFIG) from None
    return trial_instance(report.benchmark)


@main.command()
@click.argument("file", type=_FILE)
@click.option(
    "--fail-under", type=click.FloatRange(0, 1), help="Exit 1 if the pass rate is below RATE."
)
@click.option(
    "--max-error-rate",
    type=click.FloatRange(0, 1),
    help="Exit 3 if more than RATE of the workflow calls failed or of the scores have no "
    "judgement (judge or worker errors). Default: the benchmark's checks.maxErrorRate "
    "(the error_rate check's), and exit 3 on any judge outage.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-cache", is_flag=True, help="Ask the judge again instead of reusing answers.")
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append this version's outputs to a recorded outputs file (JSONL), for offline "
    "re-scoring with a recorded target.",
)
@click.option(
    "--filter",
    "include",
    multiple=True,
    metavar="TEXT",
    help="Run only the rows whose id contains TEXT (repeatable: any of them). A trial: "
    "its results are kept apart and the version's stored results stay whole.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="TEXT",
    help="Leave out the rows whose id contains TEXT (repeatable); a trial like --filter.",
)
@_verbose
@_storage_faults_refused
def run(
    file: Path,
    fail_under: float | None,
    max_error_rate: float | None,
    as_json: bool,
    no_cache: bool,
    record: Path | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    verbose: bool,
) -> None:
    """Run benchmark FILE for the workflow's current version and print a summary.

    Exit codes: 1 pass rate below --fail-under, 2 invalid configuration, 3 incomplete
    (judge outage, or failed workflow calls or unjudged scores above --max-error-rate),
    4 the run itself failed (a full disk or a corrupt database among the causes), 5 a
    case regressed against the previous version (compare.failOn).
    """
    from n8n_deepeval_pipeline.console.run_summary import render_summary
    from n8n_deepeval_pipeline.tables.row_selection import RowSelection

    selection = RowSelection(include=include, exclude=exclude) if include or exclude else None
    try:
        with _workers_warming(selection is None):
            benchmark, checked = _check(file, for_run=True)  # read once: the run registers it
            _warn(file, checked.warnings)
            with _instance_for(file, checked, selection) as instance:
                runner = _runner(file, instance, not no_cache, selection, benchmark)
                partition = runner.register_current_version(checked.workflow_hash)
                name = runner.benchmark.name
                click.echo(f"running {name} for workflow {partition[:12]} …", err=True)
                materialised = runner.materialise(partition, verbose=verbose)
                summary, incomplete = _judged(
                    runner, partition, materialised, max_error_rate, verbose
                )
                if selection is not None:
                    kept = settings.home()
                    trial = f"{summary.runs} runs of {selection.describe()}, kept in {kept}"
                    summary = summary.model_copy(update={"trial": trial})
                if record is not None:
                    written = runner.record(partition, record)
                    click.echo(
                        f"recorded {written} outputs of {partition[:12]} in {record}", err=True
                    )
    except BenchmarkConfigError as error:
        raise _Refused(str(error), EXIT_INVALID_CONFIG) from None
    click.echo(summary.model_dump_json(indent=2) if as_json else render_summary(summary))
    regressed = "no_regression" in materialised.failed_checks
    if regressed:  # said even when the run is incomplete: its exit code 3 hides this one
        gate = runner.benchmark.compare.fail_on
        click.echo(f"{gate} against the previous version: see `n8n-deepeval compare`", err=True)
    if incomplete:
        click.echo(incomplete, err=True)
        sys.exit(EXIT_INCOMPLETE)
    if regressed:
        sys.exit(EXIT_RUN_REGRESSION)
    if fail_under is not None and summary.pass_rate < fail_under:
        click.echo(f"pass rate {summary.pass_rate:.1%} is below {fail_under:.1%}", err=True)
        sys.exit(EXIT_BELOW_FAIL_UNDER)


def _judged(
    runner: Any,
    partition: str,
    materialised: Any,
    max_error_rate: float | None = None,
    verbose: bool = False,
) -> tuple[BenchmarkSummary, str | None]:
    """A materialised version's summary, and why it is incomplete (exit 3), if it is.

    A version whose steps failed is refused with exit 4, in the one line of a storage
    fault when one is behind it; `run` and `backfill` give one answer for a version.
    """
    if not materialised.completed:
        fault = _storage_fault(materialised.errors)
        raise _Refused(fault or _failure(partition, materialised.errors, verbose), EXIT_RUN_FAILED)
    summary = runner.summary(partition)
    if materialised.attempts is not None:  # what the judge cost every attempt, and this run
        spend = {"run_id": materialised.run_id, "attempts": materialised.attempts}
        summary = summary.model_copy(update=spend)
    limit = runner.benchmark.checks.max_error_rate
    return summary, _incompleteness(summary.errors, max_error_rate, limit)


def _failure(partition: str, errors: Sequence[str], verbose: bool) -> str:
    """Why a version's run failed: its steps' errors, outermost first, once each."""
    said = "".join(f"\n  {error}" for error in dict.fromkeys(errors))
    where = "see the log above" if verbose else "--verbose shows Dagster's log"
    return f"the run of workflow {partition[:12]} failed ({where})" + (f":{said}" if said else "")


def _incompleteness(
    errors: ErrorSummary, max_error_rate: float | None, max_error_rate_checked: float
) -> str | None:
    """Why the run counts as incomplete, or None.

    The limit is the error_rate check's (checks.maxErrorRate) unless --max-error-rate sets
    one, so that the CLI and the check give one answer.
    """
    from n8n_deepeval_pipeline.console.run_summary import judge_trouble, over_error_limit

    if max_error_rate is None and errors.judge_outage:
        return (
            f"incomplete: {judge_trouble(errors)} "
            "(--max-error-rate sets how many unjudged scores are acceptable)"
        )
    if max_error_rate is None:
        limit, named = max_error_rate_checked, "checks.maxErrorRate"
    else:
        limit, named = max_error_rate, "--max-error-rate"
    over = over_error_limit(errors, limit)
    if over:
        return f"incomplete: {' and '.join(over)}, above {named} {limit:.1%}"
    return None


@main.command()
@click.argument("file", type=_FILE)
@click.option(
    "--from",
    "from_asset",
    default=None,
    help="Re-materialise this asset and everything downstream (e.g. metric_scores), "
    "from stored upstream tables.",
)
@_verbose
@_storage_faults_refused
def backfill(file: Path, from_asset: str | None, verbose: bool) -> None:
    """Re-run benchmark FILE for every workflow version the instance knows.

    The current version is run in full; older ones are re-scored from their stored outputs.
    Exit codes, as `run`'s: 3 a version is incomplete (judge outage, or errors above
    checks.maxErrorRate), 4 a version's run failed (a full disk or a corrupt database
    among the causes).
    """
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    try:
        with local_instance() as instance:
            benchmark, checked = _check(file, for_run=True)
            runner = _runner(file, instance, benchmark=benchmark)
            # Older versions' workflow and outputs cannot be made again: re-score them.
            current = None if from_asset else runner.register_current_version(checked.workflow_hash)
            versions = runner.known_versions()
            if not versions:
                raise click.ClickException("no known workflow versions: run the benchmark first")
            failed: list[str] = []
            incomplete: list[str] = []
            for number, partition in enumerate(versions, start=1):
                start = from_asset or (None if partition == current else "metric_scores")
                what = f"from {start}" if start else "every asset"
                progress = f"[{number}/{len(versions)}] workflow {partition[:12]}: {what}"
                click.echo(progress, err=True)
                try:  # a failed version does not keep the others from being backfilled
                    ended = runner.materialise(partition, start, verbose)
                    _, why = _judged(runner, partition, ended, verbose=verbose)
                except _Refused as failure:
                    failed.append(failure.message)
                    continue
                if why:
                    incomplete.append(f"workflow {partition[:12]}: {why}")
    except (BenchmarkConfigError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if failed:  # one storage fault behind every failure is said once
        raise _Refused("\n".join(dict.fromkeys(failed)), EXIT_RUN_FAILED)
    if incomplete:
        click.echo("\n".join(incomplete), err=True)
        sys.exit(EXIT_INCOMPLETE)
    click.echo(f"backfilled {len(versions)} version(s)")


@main.command()
@click.argument("file", type=_FILE)
@click.option("--baseline", help="Baseline version (hash or prefix); default: the one before.")
@click.option("--candidate", help="Candidate version (hash or prefix); default: the current.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@_storage_faults_refused
def compare(file: Path, baseline: str | None, candidate: str | None, as_json: bool) -> None:
    """Compare two versions of benchmark FILE, case by case.

    Exit codes: 0 nothing flagged, 1 a case has the verdict compare.failOn names (regression
    by default), 2 the comparison could not run (a version unknown or not run), 4 the disk
    is full or the database corrupt.
    """
    from n8n_deepeval_pipeline.console.comparison import comparison_json, render_comparison
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.statistics.version_comparison import cases_failing_gate
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    try:
        with local_instance() as instance:
            runner = _runner(file, instance)
            before, after = runner.versions_to_compare(baseline, candidate)
            comparison = runner.stored_versions([before, after]).compare(before, after)
    except (BenchmarkConfigError, UnknownVersionError) as error:
        raise _Refused(str(error), EXIT_COMPARE_FAILED) from None
    gate = runner.benchmark.compare.fail_on
    flagged = cases_failing_gate(comparison, gate)
    if as_json:
        printed = comparison_json(comparison, before, after, gate, flagged)
        click.echo(json.dumps(printed, indent=2))
    else:
        click.echo(render_comparison(comparison, before, after))
    if flagged:
        click.echo(
            f"{len(flagged)} case(s) flagged {gate} or worse: {', '.join(flagged)}", err=True
        )
        sys.exit(EXIT_REGRESSION)


@main.command()
@click.argument("file", type=_FILE)
@click.option("--hash", "version", help="The version (hash or prefix); default: the current.")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for report.html, eval-results.json and eval-pr-comment.md.",
)
@_storage_faults_refused
def report(file: Path, version: str | None, out: Path) -> None:
    """Write the report of a version of benchmark FILE, compared with its baseline."""
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.report import write_report
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    try:
        with local_instance() as instance:
            runner = _runner(file, instance)
            written = write_report(runner.report(runner.candidate_version(version)), out)
    except (BenchmarkConfigError, UnknownVersionError) as error:
        raise _Refused(str(error), EXIT_COMPARE_FAILED) from None
    for path in written.values():
        click.echo(str(path))


@main.command()
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
@click.option("--redact", is_flag=True, help=_REDACT_HELP)
@click.option("--force", is_flag=True, help="Overwrite an existing benchmark file.")
def init(
    workflow: str, out: Path | None, from_executions: bool, limit: int, redact: bool, force: bool
) -> None:
    """Write a first, commented benchmark for WORKFLOW (an exported file, or an id in n8n).

    The start and end node, the dataset's columns and the metrics are read off the
    workflow; the file is validated once written.
    """
    from n8n_deepeval_pipeline.console.scaffold import benchmark_name, write_benchmark
    from n8n_deepeval_pipeline.n8n_api.client import N8nApiError
    from n8n_deepeval_pipeline.n8n_api.traffic_dataset import ExecutionQuery

    client = None if Path(workflow).is_file() else _api_client()
    try:
        with client or nullcontext():
            source = _workflow_source(workflow, client, from_executions)
            name = benchmark_name(str(source.workflow.get("name") or ""))
            out = out or Path(f"{name}.benchmark.yaml")
            if out.exists() and not force:
                raise click.ClickException(f"{out} exists (--force overwrites it)")
            query = ExecutionQuery(workflow_id=workflow, limit=limit) if from_executions else None
            written = write_benchmark(source, out, client, query, _progress, redact)
    except (N8nApiError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if written.drawn is not None and not written.drawn.rows:
        click.echo(_none_drawn(written.drawn, query) + ": no row drawn", err=True)
    elif written.drawn is not None:
        click.echo(_drawn(written.drawn, len(written.drawn.rows), str(written.dataset)), err=True)
    if written.example_row:
        click.echo(f"wrote one example row to {written.dataset}: replace it", err=True)
    click.echo(f"wrote {written.benchmark}")
    try:
        _, report = _check(written.benchmark)
    except BenchmarkConfigError as error:
        raise _Refused(f"the written benchmark does not validate:\n{error}", 1) from None
    click.echo(f"ok {written.benchmark}: {report.rows} rows · {len(report.metrics)} metrics")


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


def _progress(read: int) -> None:
    click.echo(f"read {read} executions …", err=True)


@main.group()
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
@click.option("--redact", is_flag=True, help=_REDACT_HELP)
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
    from n8n_deepeval_pipeline.n8n_api.client import N8nApiError
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
        with _api_client() as client:
            draft, added = draw_dataset(
                client, query, out or str(data_table), expected_from_output, redact,
                _progress,
            )  # fmt: skip
    except (N8nApiError, ValueError) as error:  # file and config errors are ValueErrors
        raise click.ClickException(str(error)) from None
    if not draft.rows:
        raise click.ClickException(_none_drawn(draft, query) + ": nothing written")
    click.echo(_drawn(draft, added, str(out or f"Data Table {data_table!r}")))


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


def _api_client() -> Any:
    """The n8n the environment names; a command that needs one refuses to run without it."""
    from n8n_deepeval_pipeline.n8n_api.client import client_from_environment

    client = client_from_environment()
    if client is None:
        raise click.ClickException("set N8N_API_URL and N8N_API_KEY to read from n8n")
    return client


def _none_drawn(draft: Any, query: Any) -> str:
    """Why the executions gave no row, in the terms of the query."""
    since = f" since {query.since.isoformat()}" if query.since else ""
    matched = f"{draft.executions} executions matched (status {query.status}{since})"
    return matched if not draft.executions else f"{matched}, none with an input to replay"


def _drawn(draft: Any, added: int, where: str) -> str:
    left_out = [
        f"{draft.duplicates} duplicate(s)" if draft.duplicates else "",
        f"{draft.without_input} without an input" if draft.without_input else "",
    ]
    note = "; ".join(part for part in left_out if part)
    return (
        f"{draft.executions} executions → {len(draft.rows)} rows{f' ({note})' if note else ''}"
        f" · {added} new in {where}, {len(draft.rows) - added} already there"
    )


@main.group()
def cache() -> None:
    """The judge-call cache (answers reused by re-runs and resumed runs)."""


@cache.command("clear")
def cache_clear() -> None:
    """Forget every cached judge answer."""
    from n8n_deepeval_pipeline.judging.shared_state import SharedState

    folder = settings.judge_state_dir()
    path = folder / SharedState.FILE_NAME
    removed = SharedState.in_folder(folder).clear_cache() if path.exists() else 0
    click.echo(f"removed {removed} cached judge answer(s) from {path}")


_UI_HOST = "127.0.0.1"
_PORTS_TO_TRY = 100


def _free_port(first: int) -> int:
    """The first port from ``first`` up that nothing listens on (on the UI's host).

    Only a port in use is skipped: any other refusal (a port below 1024 without root)
    would refuse the next ports too, so it is said as it is.
    """
    last = min(first + _PORTS_TO_TRY, 65536) - 1
    for port in range(first, last + 1):
        with socket.socket() as probe:
            # As the webserver binds: a port left in TIME_WAIT counts as free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((_UI_HOST, port))
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    continue
                reason = error.strerror or str(error)
                raise click.ClickException(
                    f"cannot listen on {_UI_HOST}:{port}: {reason}"
                ) from None
            return port
    raise click.ClickException(f"no free port on {_UI_HOST} from {first} to {last}")


@main.command()
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=3000,
    show_default=True,
    help="The UI's port; when it is taken, the next free one.",
)
def ui(port: int) -> None:
    """Start the Dagster UI and daemon on 127.0.0.1 with the CLI's instance and database."""
    from n8n_deepeval_pipeline.orchestration.code_location import DEFINITIONS_MODULE
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    with local_instance() as instance:  # created here, so that Dagster's processes find it made
        home = instance.root_directory
    click.echo(f"Dagster instance {home} · database {settings.database_path()}", err=True)
    chosen = _free_port(port)
    taken = f" ({port} is taken)" if chosen != port else ""
    click.echo(f"Dagster UI at http://{_UI_HOST}:{chosen}{taken}", err=True)
    command = [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-h",
        _UI_HOST,
        "-p",
        str(chosen),
        "-m",
        DEFINITIONS_MODULE,
    ]
    sys.exit(_serve(command))


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_SHUTDOWN_S = 5.0  # for dagster dev to stop its processes in order
_GRACE_S = 2.0  # for what it left behind to stop on SIGTERM, before SIGKILL
_POLL_S = 0.2  # how soon a stop signal is acted on


def _serve(command: list[str]) -> int:
    """Run ``dagster dev`` in a process group of its own until it exits or is told to stop.

    A stop signal here is passed to ``dagster dev`` alone, which stops its processes in
    order (signalled all at once, it restarts a code server that then outlives it by
    45 s); whatever of its group is left a few seconds later is stopped too. Its exit
    code, or 0 after a stop.
    """
    stop = threading.Event()
    # Set before the child starts, so that no stop signal is missed; a signal only sets
    # the flag, so a second one (during the shutdown) changes nothing. A shell hands a
    # background job SIGINT ignored, which exec keeps (and Dagster maps SIGTERM to its
    # SIGINT handling, so it would ignore both); a handler is reset to the default on
    # exec, so the child starts with default dispositions.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda _signum, _frame: stop.set())
    dagster = subprocess.Popen(command, start_new_session=True)
    code = _wait(dagster, stop.is_set)
    if code is None:
        dagster.send_signal(signal.SIGTERM)
        shutdown = time.monotonic() + _SHUTDOWN_S
        _wait(dagster, lambda: time.monotonic() > shutdown)
        code = 0
    _stop_group(dagster)
    dagster.wait()
    return code


def _wait(process: subprocess.Popen[bytes], until: Callable[[], bool]) -> int | None:
    """The process's exit code, or None if ``until()`` holds before it exits."""
    while not until():
        with contextlib.suppress(subprocess.TimeoutExpired):
            return process.wait(timeout=_POLL_S)
    return None


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to a process group; whether any of it was still there."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


def _stop_group(leader: subprocess.Popen[bytes]) -> None:
    """SIGTERM what is left of the leader's process group, SIGKILL it after a grace period.

    The leader is reaped as soon as it exits (``poll``): unreaped, it is a zombie still in
    its group, which then answers signals until the grace period runs out.
    """
    group = leader.pid
    deadline = time.monotonic() + _GRACE_S
    if _signal_group(group, signal.SIGTERM):
        while time.monotonic() < deadline and (leader.poll() is None or _signal_group(group, 0)):
            time.sleep(0.1)
        _signal_group(group, signal.SIGKILL)


if __name__ == "__main__":
    entry()
