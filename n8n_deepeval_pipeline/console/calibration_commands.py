"""`labels`, `review` and `calibration`: people's labels of the runs, and the judge against them."""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_COMPARE_FAILED,
    EXIT_ERROR,
    EXIT_RUN_FAILED,
    Refused,
    exit_codes_stated,
    n8n_unreachable_refused,
    storage_faults_refused,
)

_VERSION = click.option(
    "--version",
    "version",
    metavar="HASH",
    help="The version (hash or prefix) whose runs to label; default: the current one.",
)
_SEED = click.option(
    "--seed",
    # calibration.sampler.MAX_SEED, written out: importing the sampler loads numpy
    type=click.IntRange(0, 2**32 - 1),
    default=0,
    show_default=True,
    help="The sample's seed: reviewers given the same one see the same runs, so their "
    "labels overlap and their agreement with each other is measured.",
)
_ONLINE = click.option(
    "--online",
    is_flag=True,
    help="Label production executions scored online (the online section) instead of a "
    "version's runs; their text is read again from n8n (N8N_API_URL, N8N_API_KEY).",
)
_RED_TEAM = click.option(
    "--red-team",
    "red_team",
    is_flag=True,
    help="Label the version's played attacks (redTeam) instead of its runs: did the agent "
    "hold, as DeepTeam's judge says?",
)
_METRICS = click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="LABEL",
    help="A metric to label (repeatable); default: every metric that calls a judge.",
)


def _sampling(command: Any) -> Any:
    """The options of the commands that sample runs to label: metrics, source, seed."""
    for option in reversed((_METRICS, _ONLINE, _RED_TEAM, _SEED)):
        command = option(command)
    return command


def _reviewer(name: str | None) -> str:
    return name or getpass.getuser()


def _chosen_metrics(benchmark: Any, named: Sequence[str]) -> list[str]:
    from n8n_deepeval_pipeline.calibration.status import UnknownMetricError, metrics_to_review

    try:
        return metrics_to_review(benchmark, named)
    except UnknownMetricError as error:
        raise Refused(f"--metric {error}", EXIT_ERROR) from None


def _sampled(
    runner: Any,
    version: str | None,
    metrics: Sequence[str],
    sample: int | None,
    reviewer: str | None,
    seed: int,
    online: bool = False,
    red_team: bool = False,
) -> tuple[str, list[Any]]:
    """What is sampled, and its review items (leaving out what ``reviewer`` labelled).

    A version's runs; with ``online`` the production items scored online; with ``red_team``
    the version's played attacks.
    """
    from n8n_deepeval_pipeline.calibration.review_items import sampled_items
    from n8n_deepeval_pipeline.red_team.review import red_team_review_items

    count = sys.maxsize if sample is None else sample
    done = {
        (label.run_id, label.metric)
        for label in runner.label_store().labels()
        if reviewer is not None and label.reviewer == reviewer
    }
    if online and red_team:
        raise click.UsageError("give one of --online or --red-team")
    if online:
        return "production traffic", _online_items(runner, version, metrics, count, done, seed)
    chosen = runner.candidate_version(version)
    if red_team:
        if runner.benchmark.red_team is None:
            raise Refused("--red-team: the benchmark has no redTeam section", EXIT_ERROR)
        return chosen, red_team_review_items(runner.red_team_results(chosen), count, done, seed)
    rows = runner.runs_to_review(chosen)
    return chosen, sampled_items(runner.benchmark, rows, metrics, count, done, seed)


def _online_items(
    runner: Any,
    version: str | None,
    metrics: Sequence[str],
    count: int,
    done: set[tuple[str, str]],
    seed: int,
) -> list[Any]:
    """A sample of the production items scored online, their executions read from n8n."""
    from n8n_deepeval_pipeline.online.review import online_review_items

    if runner.benchmark.online is None:
        raise Refused("--online: the benchmark has no online section", EXIT_ERROR)
    if version is not None:
        raise click.UsageError("--online samples production traffic of every version: no --version")
    workflow, _ = runner.n8n().workflow(runner.benchmark)
    with benchmarks.api_client() as client:
        return online_review_items(
            runner.benchmark, runner.online_scores(), metrics, count, client, workflow, done, seed
        )


class _ToLabel(NamedTuple):
    """What a command offers a reviewer: the benchmark, its metrics, the sample and its items."""

    benchmark: str
    metrics: list[str]
    sampled: str  # the version key, or "production traffic"
    items: list[Any]


def _to_label(
    file: Path,
    version: str | None,
    metrics: Sequence[str],
    sample: int | None,
    reviewer: str | None,
    seed: int,
    online: bool,
    red_team: bool,
) -> _ToLabel:
    """The sample of benchmark ``file`` to label; a version unknown or not run is refused."""
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    try:
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            chosen = _chosen_metrics(runner.benchmark, metrics)
            sampled, items = _sampled(
                runner, version, chosen, sample, reviewer, seed, online, red_team
            )
    except (BenchmarkConfigError, UnknownVersionError) as error:
        raise Refused(str(error), EXIT_COMPARE_FAILED) from None
    return _ToLabel(runner.benchmark.name, chosen, sampled, items)


@click.group()
def labels() -> None:
    """People's labels of a benchmark's runs: runs exported to label, labels imported."""


@exit_codes_stated("labels export")
@labels.command("export")
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A .csv or .jsonl file to write the runs to label into.",
)
@click.option(
    "--data-table",
    metavar="NAME",
    help="An n8n Data Table (id or name) to add the runs to label to, instead of a file: "
    "the rows it holds are kept (N8N_API_URL, N8N_API_KEY).",
)
@_VERSION
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="At most N (run, metric) pairs, stratified by metric and verdict, weighted to scores "
    "near the threshold and to judge panels that disagreed; default: every one.",
)
@click.option(
    "--reviewer",
    help="Leave out the runs this reviewer has labelled (and fill the reviewer column).",
)
@click.option(
    "--blind",
    is_flag=True,
    help="Leave out the judge's score, verdict and reason, so that they cannot anchor the "
    "labeller.",
)
@_sampling
@n8n_unreachable_refused
@storage_faults_refused
def labels_export(
    file: Path,
    out: Path | None,
    data_table: str | None,
    version: str | None,
    sample: int | None,
    reviewer: str | None,
    blind: bool,
    metrics: tuple[str, ...],
    online: bool,
    red_team: bool,
    seed: int,
) -> None:
    """Write runs of benchmark FILE to label offline: a row per run and metric."""
    from n8n_deepeval_pipeline.calibration.label_files import sheet_rows, write_sheet

    if (out is None) == (data_table is None):
        raise click.UsageError("give one of --out FILE or --data-table NAME")
    asked = _to_label(file, version, metrics, sample, reviewer, seed, online, red_team)
    chosen, version_key, items = asked.metrics, asked.sampled, asked.items
    rows = sheet_rows(items, blind)
    if reviewer:
        rows = [{**row, "reviewer": reviewer} for row in rows]
    if not rows:
        raise Refused(
            f"nothing to label in {version_key}: no judged score of {', '.join(chosen)} is "
            "left unlabelled (dry-run placeholders are not judgements)",
            EXIT_ERROR,
        )
    if out is not None:
        with settings.made_for_the_user(out.parent):
            write_sheet(out, rows, blind)
        click.echo(f"{len(rows)} rows to label ({len(items)} runs of {version_key}) in {out}")
        return
    from n8n_deepeval_pipeline.calibration.data_table_labels import export_to_table

    with benchmarks.api_client() as client:
        done = export_to_table(client, str(data_table), rows, blind)
    click.echo(
        f"{done.written} rows to label added to n8n Data Table {done.table.name!r} "
        f"({done.already_there} already there, kept as they are)"
    )


@exit_codes_stated("labels import")
@labels.command("import")
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.argument("labels_file", required=False, type=benchmarks.EXISTING_FILE)
@click.option(
    "--data-table",
    metavar="NAME",
    help="Read the labels from this n8n Data Table (id or name) instead of a file.",
)
@click.option("--reviewer", help="The reviewer of the rows whose reviewer cell is empty.")
@n8n_unreachable_refused
@storage_faults_refused
def labels_import(
    file: Path, labels_file: Path | None, data_table: str | None, reviewer: str | None
) -> None:
    """Read people's labels of benchmark FILE's runs from LABELS_FILE (.csv or .jsonl).

    A row's label is pass/fail, true/false, 1/0 or a 1–5 rating (a metric whose labels
    include any of 2–5 has its numbers read as ratings: 4–5 pass, 1–2 fail, 3 neither);
    rows without a label are left for later. A row naming an unknown run or metric refuses
    the whole file, with its line and field. A label replaces the same reviewer's earlier
    label of that run and metric.
    """
    from n8n_deepeval_pipeline.calibration.label_files import (
        LabelFileError,
        Scored,
        labels_from_records,
        named_runs,
        read_sheet,
    )
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.red_team.review import METRIC_PREFIX
    from n8n_deepeval_pipeline.tables.rows import LabelSource

    if (labels_file is None) == (data_table is None):
        raise click.UsageError("give one of LABELS_FILE or --data-table NAME")
    origin: LabelSource = "import" if labels_file is not None else "data_table"
    try:
        if labels_file is not None:
            records, source = read_sheet(labels_file), str(labels_file)
        else:
            from n8n_deepeval_pipeline.calibration.data_table_labels import records_from_table

            with benchmarks.api_client() as client:
                records = records_from_table(client, str(data_table))
            source = f"n8n Data Table {data_table!r}"
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            store = runner.label_store()
            pairs = store.scored(named_runs(records))
            attacks = sorted({metric for _, metric in pairs if metric.startswith(METRIC_PREFIX)})
            scored = Scored(metrics=(*runner.benchmark.metric_labels, *attacks), pairs=pairs)
            found, blank = labels_from_records(records, scored, source, reviewer, origin)
            store.upsert(found)
    except (LabelFileError, BenchmarkConfigError, ValueError) as error:
        raise Refused(str(error), EXIT_ERROR) from None
    reviewers = sorted({label.reviewer for label in found})
    left = f"; {blank} rows without a label left for later" if blank else ""
    click.echo(
        f"imported {len(found)} labels by {', '.join(reviewers) or 'nobody'} from {source}{left}"
    )


@exit_codes_stated("review")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
@_VERSION
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="(run, metric) pairs to queue, stratified by metric and verdict, weighted to scores "
    "near the threshold and to judge panels that disagreed.",
)
@click.option("--reviewer", help="Who labels (default: the user's login name).")
@click.option(
    "--no-browser", is_flag=True, help="Print the review page's address, open no browser."
)
@click.option(
    "--no-serve",
    is_flag=True,
    help="Prepare the queue and print the page's address, without serving the workspace "
    "(n8n-deepeval ui serves it).",
)
@_sampling
@n8n_unreachable_refused
@storage_faults_refused
def review(
    file: Path,
    version: str | None,
    sample: int,
    reviewer: str | None,
    no_browser: bool,
    no_serve: bool,
    metrics: tuple[str, ...],
    online: bool,
    red_team: bool,
    seed: int,
) -> None:
    """Label a sample of benchmark FILE's runs in the browser: the review page.

    Prepares the reviewer's queue (the runs they have labelled are left out), then opens
    the review page of the results workspace, which shows one run at a time, the judge's
    verdicts hidden until it is labelled, and writes each label into human_labels as it is
    given. The workspace is served from here until Ctrl-C, unless one serving this store
    already answers on $N8N_DEEPEVAL_REPORTS_PORT. Preparing a queue again replaces the
    reviewer's queue (its skips and undo history); the labels given stay.
    """
    from n8n_deepeval_pipeline.calibration.review_queue import prepare_queue
    from n8n_deepeval_pipeline.console.workspace_serving import open_review_page, review_path

    name = _reviewer(reviewer)
    asked = _to_label(file, version, metrics, sample, name, seed, online, red_team)
    chosen, version_key, items = asked.metrics, asked.sampled, asked.items
    if not items:
        raise Refused(
            f"nothing to review in {version_key} for {name}: every judged score of "
            f"{', '.join(chosen)} is labelled, or none was judged (dry-run placeholders are "
            "not judgements)",
            EXIT_ERROR,
        )
    benchmark = asked.benchmark
    path = prepare_queue(settings.home(), benchmark, name, version_key, items, file)
    pairs = sum(len(item.metrics) for item in items)
    click.echo(
        f"review queue of {benchmark} {version_key} for {name}: {len(items)} runs, {pairs} "
        f"labels to give ({', '.join(chosen)})\n{path}"
    )
    if no_serve:
        click.echo(f"review page: {settings.workspace_url()}{review_path(benchmark, name)}")
        return
    open_review_page(file, benchmark, name, browser=not no_browser)


@exit_codes_stated("calibration")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as JSON.")
@click.option(
    "--adopt",
    "adopt",
    multiple=True,
    metavar="METRIC",
    help="Write METRIC's fitted threshold into FILE (repeatable): only its threshold value "
    "changes (or a threshold line is added); comments and formatting stay.",
)
@click.option(
    "--align",
    "align",
    metavar="METRIC",
    help="Rewrite METRIC's criteria or evaluation steps (a G-Eval's, a DAG's node texts) with "
    "DeepEval's PromptOptimizer so that its judge agrees with the labels (calibration.align); "
    "written as METRIC_aligned only when kappa on held-out rows improves.",
)
@click.option("--fresh", is_flag=True, help="With --align: start the search over, not resume it.")
@storage_faults_refused
def calibration(
    file: Path, as_json: bool, adopt: tuple[str, ...], align: str | None, fresh: bool
) -> None:
    """How far benchmark FILE's judges agree with people's labels, metric by metric.

    Raw agreement, Cohen's kappa with a 95% bootstrap interval (resampling dataset rows),
    the confusion matrix, ratings' weighted kappa and Krippendorff's alpha, the reviewers'
    agreement with each other, each judge-backed metric's standing against
    calibration.minKappa and minLabels, and the threshold that agrees best with the labels.
    """
    from n8n_deepeval_pipeline.calibration.measurement import measure, render_calibration
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    if align is not None:
        if adopt:
            raise click.UsageError("give one of --align or --adopt")
        _align(file, align, fresh, as_json)
        return

    try:
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            measured = measure(runner.benchmark, runner.label_store().judged())
    except BenchmarkConfigError as error:
        raise Refused(str(error), EXIT_ERROR) from None
    if as_json:
        click.echo(json.dumps(measured.model_dump(mode="json"), indent=2))
    else:
        click.echo(render_calibration(measured))
    for metric in adopt:
        _adopt(file, runner.benchmark, measured, metric)


def _adopt(file: Path, benchmark: Any, measured: Any, metric: str) -> None:
    """Write one metric's fitted threshold into the benchmark file, or refuse (exit 1)."""
    from n8n_deepeval_pipeline.calibration.threshold_adoption import (
        AdoptionError,
        adopt_threshold,
        threshold_text,
    )

    fit = measured.threshold(metric)
    if fit is None or fit.fitted is None:
        raise Refused(f"--adopt {metric}: no fitted threshold (label its scored runs)", EXIT_ERROR)
    if fit.refusal is not None:
        raise Refused(
            f"--adopt {metric}: the fitted threshold {threshold_text(fit.fitted)} is not "
            f"adopted: {fit.refusal}",
            EXIT_ERROR,
        )
    try:
        adopt_threshold(file, benchmark, metric, fit.fitted)
    except AdoptionError as error:
        raise Refused(f"--adopt {metric}: {error}", EXIT_ERROR) from None

    def shown(value: float | None) -> str:
        return "undefined" if value is None else f"{value:.2f}"

    click.echo(
        f"{file}: {metric} threshold {fit.configured} → {threshold_text(fit.fitted)} "
        f"(kappa {shown(fit.configured_kappa)} → {shown(fit.fitted_kappa)}; cross-validated "
        f"{shown(fit.cross_validated_kappa)})",
        err=True,
    )


def _align(file: Path, metric: str, fresh: bool, as_json: bool) -> None:
    """Align one metric's text with the labels; write it only when held-out kappa improves."""
    import shutil

    from n8n_deepeval_pipeline.calibration.aligned_metric import (
        AlignedMetricError,
        adopt_aligned,
        already_there,
    )
    from n8n_deepeval_pipeline.console.align_report import (
        align_round_line,
        alignment_json,
        render_alignment,
    )
    from n8n_deepeval_pipeline.orchestration import judge_alignment as flow
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.orchestration.prompt_optimization import cli_resources
    from n8n_deepeval_pipeline.worker.launcher import ChildFailed

    resources = cli_resources()
    try:
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance)
            plan = flow.plan_alignment(runner, metric, resources)
    except (BenchmarkConfigError, flow.AlignmentRefused) as error:
        raise Refused(str(error), EXIT_ERROR) from None
    folder = flow.alignment_folder(plan)
    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    click.echo(
        f"aligning {metric} on {len(plan.split.examples)} labelled training runs; kept in {folder}",
        err=True,
    )
    try:
        alignment = flow.run_alignment(
            plan, resources, folder, lambda report: click.echo(align_round_line(report), err=True)
        )
    except ChildFailed as failed:  # the optimiser's process: its exit code and last lines
        # A failed search, not a refusal: told apart from "kappa did not rise" (1).
        raise Refused(failed.message, EXIT_RUN_FAILED) from None
    finally:
        resources.pool.pool.close()
    written = None
    best = alignment.outcome.best_text
    existing = already_there(plan.benchmark, plan.config, best)
    if alignment.decision == "improved" and existing is not None:
        written = f"{file} has it already, as {existing}: nothing written"
    elif alignment.decision == "improved":
        try:
            label = adopt_aligned(file, plan.benchmark, plan.config, best)
        except AlignedMetricError as error:
            raise Refused(f"--align {metric}: {error}; nothing written", EXIT_ERROR) from None
        written = (
            f"{label} written into {file} beside {metric}, deciding no run until you list it "
            "in aggregate.metrics"
        )
    if as_json:
        click.echo(json.dumps(alignment_json(alignment, written), indent=2))
    else:
        click.echo(render_alignment(alignment, written))
    if written is None:
        sys.exit(EXIT_ERROR)
