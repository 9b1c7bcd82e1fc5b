"""`run` and `backfill`: a benchmark materialised for a version, and its summary."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_INVALID_CONFIG,
    Refused,
    exit_codes_stated,
    failed_steps_refused,
    n8n_unreachable_refused,
    refuse_a_damaged_database,
    storage_faults_refused,
)
from n8n_deepeval_pipeline.summary.exit_codes import severity

if TYPE_CHECKING:  # the summary imports SciPy: only the commands that print one load it
    from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
    from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome
    from n8n_deepeval_pipeline.summary.run_summary import BenchmarkSummary


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


def _processes_warming(benchmark: Any, wanted: bool) -> ExitStack:
    """The red team's worker and the simulator process starting beside the run's set-up.

    Each is started, if the benchmark has it and the run's steps run here, as soon as the
    benchmark is read: their imports (DeepTeam's, DeepEval's: seconds) overlap the
    instance's set-up and the first steps, and the attack set's generation and its play
    share the red team's one process.
    """
    warming = ExitStack()
    if not (wanted and settings.steps_run_in_this_process()):
        return warming
    if benchmark.red_team:
        from n8n_deepeval_pipeline.red_team import session

        warming.enter_context(session.started_ahead())
    if benchmark.simulation:
        from n8n_deepeval_pipeline.simulation import launcher

        warming.enter_context(launcher.started_ahead())
    return warming


@contextmanager
def _instance_for(path: Path, report: Any, selection: Any) -> Iterator[Any]:
    """The shared local instance, or a throwaway one for a trial of a few rows.

    Its results database stays open between uses meanwhile (for a moment only after
    each, as in a run's steps): the summary and outcome read after the run then open it
    once, not once per table (~25 ms each, ten tables).
    """
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance, trial_instance
    from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import OPEN_DATABASES

    if selection is None:
        instance = local_instance()
    else:
        try:
            selection.check(report.row_ids)
        except ValueError as error:
            raise Refused(f"{path}: {error}", EXIT_INVALID_CONFIG) from None
        instance = trial_instance(report.benchmark)
    with instance as opened, OPEN_DATABASES.kept_open():
        yield opened


@exit_codes_stated("run")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
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
@click.option(
    "--regenerate-attacks",
    is_flag=True,
    help="The red team (redTeam) generates a new attack set instead of playing the kept "
    "one; later versions keep the new one.",
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    help="Run only this version of the workflow (repeatable): a variant of target.variants, "
    "or base for the workflow itself. Default: the workflow and every variant, their calls "
    "side by side (docs/guides/variants.md).",
)
@benchmarks.verbose_option
@n8n_unreachable_refused
@storage_faults_refused
def run(
    file: Path,
    fail_under: float | None,
    max_error_rate: float | None,
    as_json: bool,
    no_cache: bool,
    record: Path | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    regenerate_attacks: bool,
    variants: tuple[str, ...],
    verbose: bool,
) -> None:
    """Run benchmark FILE for the workflow's current version and print a summary.

    The summary ends with where the version's report was written. With target.variants,
    the workflow and each variant are versions of their own, run side by side; the summary
    is followed by their matrix and each version's report.
    """
    from n8n_deepeval_pipeline.tables.row_selection import RowSelection

    selection = RowSelection(include=include, exclude=exclude) if include or exclude else None
    if selection is None:  # a trial stores its rows apart
        refuse_a_damaged_database()
    try:
        with _workers_warming(selection is None), ExitStack() as warming:
            # Imported once the zygote is starting: its imports overlap these (~0.3 s).
            from n8n_deepeval_pipeline.summary.outcome import Limits

            benchmark, checked = benchmarks.check(
                file, for_run=True
            )  # read once: the run registers it
            warming.enter_context(_processes_warming(benchmark, selection is None))
            benchmarks.warn(file, checked.warnings)
            _refuse_variant_options(benchmark, variants, record)
            limits = Limits.of(benchmark.checks.max_error_rate, max_error_rate, fail_under)
            with _instance_for(file, checked, selection) as instance:
                runner = benchmarks.runner(file, instance, not no_cache, selection, benchmark)
                if benchmark.variants:
                    _run_with_variants(
                        runner, file, variants, selection, not no_cache, verbose, limits,
                        record, as_json, regenerate_attacks,
                    )  # fmt: skip
                    return
                partition = runner.register_current_version(checked.workflow_hash)
                name = runner.benchmark.name
                click.echo(f"running {name} for workflow {partition[:12]} …", err=True)
                materialised = runner.materialise(
                    partition,
                    verbose=verbose,
                    regenerate_attacks=regenerate_attacks,
                    limits=limits,
                )
                summary = _judged(runner, partition, materialised, verbose)
                reports = {} if materialised.report is None else {"": materialised.report}
                outcome = runner.outcome(partition, limits, summary=summary)
                red_team = (
                    (runner.red_team_rates(partition), runner.red_team_results(partition))
                    if runner.benchmark.red_team
                    else None
                )
                if selection is not None:
                    kept = settings.home()
                    trial = f"{summary.runs} runs of {selection.describe()}, kept in {kept}"
                    summary = summary.model_copy(update={"trial": trial})
                if record is not None:
                    with settings.made_for_the_user(record.parent):
                        written = runner.record(partition, record)
                    click.echo(
                        f"recorded {written} outputs of {partition[:12]} in {record}", err=True
                    )
    except BenchmarkConfigError as error:
        raise Refused(str(error), EXIT_INVALID_CONFIG) from None
    _print_summary(summary, outcome, red_team, as_json)
    say_reports(reports, as_json)
    for line in said_on_stderr([("", outcome)], file):
        click.echo(line, err=True)
    sys.exit(outcome.exit_codes.run)


def said_on_stderr(outcomes: list[tuple[str, VersionOutcome]], file: Path) -> list[str]:
    """What versions' outcomes say on stderr, each after its prefix (a variant's name).

    Every finding is said whichever decides; the one that decides the exit code comes
    last, and a regression names where to see why.
    """
    found = [(prefix, finding) for prefix, outcome in outcomes for finding in outcome.findings]
    deciding = [pair for pair in found if pair[1].decides]
    if deciding:  # the last line says why the run exits as it does
        last = min(deciding, key=lambda pair: severity(pair[1].exit_code))
        found = [pair for pair in found if pair is not last] + [last]
    hint = f"; `n8n-deepeval compare {file}` shows why)"
    return [
        prefix
        + (finding.text.removesuffix(")") + hint if finding.kind == "regression" else finding.text)
        for prefix, finding in found
    ]


def say_reports(reports: dict[str, Path], as_json: bool) -> None:
    """Where the run wrote each version's report (by version name; "" for a workflow alone).

    Said after the summary, on stdout; with ``--json`` on stderr, stdout holding the JSON
    alone. A path under the working directory is said relative to it.
    """
    if not reports:
        return
    beside = "eval-results.json and eval-pr-comment.md beside"
    if list(reports) == [""]:
        lines = [f"report: {_shown(reports[''])} (open it in a browser; {beside} it)"]
    else:
        width = max(len(name) for name in reports)
        lines = [f"reports (open them in a browser; {beside} each):"] + [
            f"  {name:<{width}}  {_shown(path)}" for name, path in reports.items()
        ]
    click.echo("\n".join(lines) if as_json else "\n" + "\n".join(lines), err=as_json)


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is under it, else whole."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _refuse_variant_options(benchmark: Any, variants: tuple[str, ...], record: Any) -> None:
    """--variant needs variants; --record writes one version's outputs."""
    if variants and not benchmark.variants:
        raise Refused("--variant: the benchmark's target has no variants", EXIT_INVALID_CONFIG)
    if record is not None and benchmark.variants and len(variants) != 1:
        raise Refused(
            "--record writes one version's outputs: name it with --variant (base for the "
            "workflow itself)",
            EXIT_INVALID_CONFIG,
        )


def _run_with_variants(
    runner: Any,
    file: Path,
    variants: tuple[str, ...],
    selection: Any,
    judge_cache: bool,
    verbose: bool,
    limits: Limits,
    record: Path | None,
    as_json: bool,
    regenerate_attacks: bool,
) -> None:
    """The workflow and its variants (or those --variant names): run, printed, exit code."""
    from n8n_deepeval_pipeline.console import family_run

    def judged(runner: Any, partition: str, materialised: Any) -> Any:
        return _judged(runner, partition, materialised, verbose)

    ran = family_run.run_family(
        runner,
        file,
        variants,
        family_run.FamilyOptions(
            side_by_side=selection is None,
            judge_cache=judge_cache,
            verbose=verbose,
            limits=limits,
            regenerate_attacks=regenerate_attacks,
        ),
        judged,
    )
    if selection is not None:
        kept = settings.home()
        for name, summary in ran.summaries.items():
            trial = f"{summary.runs} runs of {selection.describe()}, kept in {kept}"
            ran.summaries[name] = summary.model_copy(update={"trial": trial})
    if record is not None and ran.summaries:
        (name,) = ran.summaries
        partition = ran.summaries[name].workflow_hash[:12]
        with settings.made_for_the_user(record.parent):
            written = runner.record(partition, record)
        click.echo(f"recorded {written} outputs of {name} {partition} in {record}", err=True)
    family_run.say(ran, file, as_json)


def _print_summary(
    summary: BenchmarkSummary,
    outcome: VersionOutcome,
    red_team: tuple[list[BreachRate], list[RedTeamResult]] | None,
    as_json: bool,
) -> None:
    """The summary and its outcome, and the red team's rates when the benchmark has one."""
    from n8n_deepeval_pipeline.red_team.breach_rates import red_team_table
    from n8n_deepeval_pipeline.summary.run_summary import render_summary

    if as_json:
        printed = {**summary.model_dump(mode="json"), "outcome": outcome.model_dump(mode="json")}
        if red_team is not None:
            printed["red_team"] = [rate.model_dump(mode="json") for rate in red_team[0]]
        click.echo(json.dumps(printed, indent=2))
        return
    incomplete = outcome.incomplete
    kinds = [reason.kind for reason in incomplete.reasons] if incomplete else []
    if outcome.runs or red_team is None:
        click.echo(render_summary(summary, kinds))
    else:  # a red team alone: no runs to sum up
        click.echo(f"benchmark {summary.benchmark} · workflow {outcome.key} · a red team alone")
    if red_team is not None:
        click.echo(f"\n{red_team_table(*red_team)}")


def _judged(
    runner: Any, partition: str, materialised: Any, verbose: bool = False
) -> BenchmarkSummary:
    """A materialised version's summary, with what the judge cost every attempt.

    A version whose steps failed is refused with exit 4, in the one line of a storage
    fault when one is behind it, or with exit 8 when n8n did not answer; `run` and
    `backfill` give one answer for a version.
    """
    if not materialised.completed:
        errors = materialised.errors
        raise failed_steps_refused(errors, _failure(partition, errors, verbose))
    summary: BenchmarkSummary = runner.summary(partition)
    if materialised.attempts is not None:  # what the judge cost every attempt, and this run
        spend = {"run_id": materialised.run_id, "attempts": materialised.attempts}
        summary = summary.model_copy(update=spend)
    return summary


def _failure(partition: str, errors: Sequence[str], verbose: bool) -> str:
    """Why a version's run failed: its steps' errors, outermost first, once each."""
    said = "".join(f"\n  {error}" for error in dict.fromkeys(errors))
    where = "see the log above" if verbose else "--verbose shows Dagster's log"
    return f"the run of workflow {partition[:12]} failed ({where})" + (f":{said}" if said else "")


@exit_codes_stated("backfill")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.option(
    "--from",
    "from_asset",
    default=None,
    help="Re-materialise this asset and everything downstream (e.g. metric_scores), "
    "from stored upstream tables.",
)
@benchmarks.verbose_option
@n8n_unreachable_refused
@storage_faults_refused
def backfill(file: Path, from_asset: str | None, verbose: bool) -> None:
    """Re-run benchmark FILE for every workflow version the instance knows.

    The current version is run in full; older ones are re-scored from their stored outputs.
    """
    refuse_a_damaged_database()  # before Dagster's imports: a second, not several
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
    from n8n_deepeval_pipeline.summary.outcome import FailedVersion, VersionsOutcome

    try:
        # Checked first: a file or an n8n that refuses it is said before any instance opens.
        benchmark, checked = benchmarks.check(file, for_run=True)
        with local_instance() as instance:
            runner = benchmarks.runner(file, instance, benchmark=benchmark)
            # Older versions' workflow and outputs cannot be made again: re-score them. The
            # current ones are the workflow and its variants.
            current = set() if from_asset else _current_versions(runner, checked.workflow_hash)
            versions, unrun = runner.versions_to_backfill(current)
            if unrun:  # registered from production traffic: no outputs stored to re-score
                click.echo(f"never benchmarked, left out: {', '.join(unrun)}", err=True)
            if not versions:
                raise click.ClickException("no known workflow versions: run the benchmark first")
            failed: list[FailedVersion] = []
            outcomes = []
            for number, partition in enumerate(versions, start=1):
                start = from_asset or (None if partition in current else "metric_scores")
                what = f"from {start}" if start else "every asset"
                progress = f"[{number}/{len(versions)}] workflow {partition[:12]}: {what}"
                click.echo(progress, err=True)
                try:  # a failed version does not keep the others from being backfilled
                    ended = runner.materialise(partition, start, verbose)
                    _judged(runner, partition, ended, verbose=verbose)
                except Refused as failure:
                    failed.append(
                        FailedVersion(
                            name=partition, message=failure.message, exit_code=failure.exit_code
                        )
                    )
                    continue
                outcomes.append(runner.outcome(partition))
    except (BenchmarkConfigError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    backfilled = VersionsOutcome(command="backfill", members=outcomes, failed=failed)
    if failed:  # one storage fault behind every failure is said once
        messages = dict.fromkeys(failure.message for failure in failed)
        raise Refused("\n".join(messages), backfilled.exit_code)
    incomplete = [
        f"workflow {member.key}: incomplete: {member.incomplete.text}"
        for member in backfilled.members
        if member.incomplete is not None
    ]
    if incomplete:
        click.echo("\n".join(incomplete), err=True)
        sys.exit(backfilled.exit_code)
    click.echo(f"backfilled {len(versions)} version(s)")


def _current_versions(runner: Any, workflow_hash: str) -> set[str]:
    """The current workflow's version and its variants', registered."""
    if runner.benchmark.variants:
        return {member.key for member in runner.register_current_family()}
    return {runner.register_current_version(workflow_hash)}
