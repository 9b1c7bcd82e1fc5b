"""`run` and `backfill`: a benchmark materialised for a version, and its summary."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_BELOW_FAIL_UNDER,
    EXIT_BREACH_OVER_FAIL_ON,
    EXIT_INCOMPLETE,
    EXIT_INVALID_CONFIG,
    EXIT_N8N_UNREACHABLE,
    EXIT_NEW_BREACH,
    EXIT_RUN_FAILED,
    EXIT_RUN_REGRESSION,
    Refused,
    exit_codes_stated,
    n8n_unreachable,
    n8n_unreachable_refused,
    refuse_a_damaged_database,
    storage_fault,
    storage_faults_refused,
)

if TYPE_CHECKING:  # the summary imports SciPy: only the commands that print one load it
    from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
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


def _instance_for(path: Path, report: Any, selection: Any) -> Any:
    """The shared local instance, or a throwaway one for a trial of a few rows."""
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance, trial_instance

    if selection is None:
        return local_instance()
    try:
        selection.check(report.row_ids)
    except ValueError as error:
        raise Refused(f"{path}: {error}", EXIT_INVALID_CONFIG) from None
    return trial_instance(report.benchmark)


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

    With target.variants, the workflow and each variant are versions of their own, run
    side by side; the summary is followed by their matrix.
    """
    from n8n_deepeval_pipeline.tables.row_selection import RowSelection

    selection = RowSelection(include=include, exclude=exclude) if include or exclude else None
    if selection is None:  # a trial stores its rows apart
        refuse_a_damaged_database()
    try:
        with _workers_warming(selection is None), ExitStack() as warming:
            benchmark, checked = benchmarks.check(
                file, for_run=True
            )  # read once: the run registers it
            warming.enter_context(_processes_warming(benchmark, selection is None))
            benchmarks.warn(file, checked.warnings)
            _refuse_variant_options(benchmark, variants, record)
            with _instance_for(file, checked, selection) as instance:
                runner = benchmarks.runner(file, instance, not no_cache, selection, benchmark)
                if benchmark.variants:
                    _run_with_variants(
                        runner, file, variants, selection, not no_cache, verbose,
                        max_error_rate, record, as_json, fail_under,
                    )  # fmt: skip
                    return
                partition = runner.register_current_version(checked.workflow_hash)
                name = runner.benchmark.name
                click.echo(f"running {name} for workflow {partition[:12]} …", err=True)
                materialised = runner.materialise(
                    partition, verbose=verbose, regenerate_attacks=regenerate_attacks
                )
                summary, incomplete = _judged(
                    runner, partition, materialised, max_error_rate, verbose
                )
                red_team = (
                    (runner.red_team_rates(partition), runner.red_team_results(partition))
                    if runner.benchmark.red_team
                    else None
                )
                rates = red_team[0] if red_team else None
                breach = _red_team_verdicts(rates, runner.benchmark, max_error_rate)
                incomplete = incomplete or breach.incomplete
                gate = runner.version_gate(partition, incomplete)
                summary = summary.model_copy(update={"gate": gate, "incomplete": incomplete})
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
    _print_summary(summary, red_team, as_json)
    if gate.has_regression:  # said even when the run is incomplete: its exit 3 hides this one
        flagged = gate.flagged_cases
        cases = f"{len(flagged)} case{'s' if len(flagged) != 1 else ''}"
        click.echo(
            f"{gate.fail_on} against baseline {gate.baseline}: {', '.join(flagged)} "
            f"({cases}; `n8n-deepeval compare {file}` shows why)",
            err=True,
        )
    for said in (breach.over_limit, breach.new):  # said whichever exit code wins
        if said:
            click.echo(said, err=True)
    if incomplete:
        click.echo(f"incomplete: {incomplete}", err=True)
        sys.exit(EXIT_INCOMPLETE)
    if gate.has_regression:
        sys.exit(EXIT_RUN_REGRESSION)
    if breach.over_limit:
        sys.exit(EXIT_BREACH_OVER_FAIL_ON)
    if breach.new:
        sys.exit(EXIT_NEW_BREACH)
    if fail_under is not None and summary.pass_rate < fail_under:
        click.echo(f"pass rate {summary.pass_rate:.1%} is below {fail_under:.1%}", err=True)
        sys.exit(EXIT_BELOW_FAIL_UNDER)


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
    max_error_rate: float | None,
    record: Path | None,
    as_json: bool,
    fail_under: float | None,
) -> None:
    """The workflow and its variants (or those --variant names): run, printed, exit code."""
    from n8n_deepeval_pipeline.console import family_run

    def judged(runner: Any, partition: str, materialised: Any) -> Any:
        return _judged(runner, partition, materialised, max_error_rate, verbose)

    outcome = family_run.run_family(
        runner, file, variants, selection is None, judge_cache, verbose, judged
    )
    if selection is not None:
        kept = settings.home()
        for name, summary in outcome.summaries.items():
            trial = f"{summary.runs} runs of {selection.describe()}, kept in {kept}"
            outcome.summaries[name] = summary.model_copy(update={"trial": trial})
    if record is not None and outcome.summaries:
        (name,) = outcome.summaries
        partition = outcome.summaries[name].workflow_hash[:12]
        with settings.made_for_the_user(record.parent):
            written = runner.record(partition, record)
        click.echo(f"recorded {written} outputs of {name} {partition} in {record}", err=True)
    family_run.say(outcome, as_json, runner.benchmark.compare.fail_on, fail_under)


def _print_summary(
    summary: BenchmarkSummary,
    red_team: tuple[list[BreachRate], list[RedTeamResult]] | None,
    as_json: bool,
) -> None:
    """The summary, and the red team's rates when the benchmark has one."""
    from n8n_deepeval_pipeline.red_team.breach_rates import red_team_table
    from n8n_deepeval_pipeline.summary.run_summary import render_summary

    if as_json and red_team is None:
        click.echo(summary.model_dump_json(indent=2))
    elif as_json:
        assert red_team is not None
        rates = [rate.model_dump(mode="json") for rate in red_team[0]]
        click.echo(json.dumps({**summary.model_dump(mode="json"), "red_team": rates}, indent=2))
    else:
        click.echo(render_summary(summary))
        if red_team is not None:
            click.echo(f"\n{red_team_table(*red_team)}")


class _RedTeamVerdicts(NamedTuple):
    """What the red team's rates say against the run (each None when it says nothing)."""

    incomplete: str | None
    over_limit: str | None
    new: str | None


def _red_team_verdicts(
    rates: list[BreachRate] | None, benchmark: Any, max_error_rate: float | None
) -> _RedTeamVerdicts:
    """Incomplete (too many attacks errored), over failOn, and breaching more than before.

    Errored attacks count against ``--max-error-rate`` (else checks.maxErrorRate), as
    unjudged scores do; more breaches is the verdict compare.failOn names, or a surer one.
    """
    if rates is None:
        return _RedTeamVerdicts(None, None, None)
    from n8n_deepeval_pipeline.red_team.breach_rates import new_breaches, over_limit

    vulnerabilities = [rate for rate in rates if rate.kind == "vulnerability"]
    attacks = sum(rate.attacks for rate in vulnerabilities)
    errors = sum(rate.errors for rate in vulnerabilities)
    limit = benchmark.checks.max_error_rate if max_error_rate is None else max_error_rate
    incomplete = (
        f"red team: {errors} of {attacks} attack runs errored (neither breached "
        f"nor held), above {limit:.1%}"
        if attacks and errors / attacks > limit
        else None
    )
    over = [
        f"{rate.vulnerability} {rate.breaches}/{rate.judged} ({rate.rate:.1%}) above "
        f"failOn {rate.fail_on:.1%}"
        for rate in over_limit(rates)
        if rate.rate is not None and rate.fail_on is not None
    ]
    new = [
        f"{rate.vulnerability}: {rate.baseline_breaches}/{rate.baseline_judged} → "
        f"{rate.breaches}/{rate.judged} breaches ({rate.verdict}, p = {rate.p_value:.3f})"
        for rate in new_breaches(rates, benchmark.compare.fail_on)
        if rate.p_value is not None
    ]
    return _RedTeamVerdicts(
        incomplete,
        "red team: breach rate over redTeam.failOn: " + "; ".join(over) if over else None,
        "red team: more breaches than the previous version: " + "; ".join(new) if new else None,
    )


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
        unreachable = n8n_unreachable(materialised.errors)
        if unreachable is not None:  # the outside world failed a step, not the run
            raise Refused(unreachable, EXIT_N8N_UNREACHABLE)
        fault = storage_fault(materialised.errors)
        raise Refused(fault or _failure(partition, materialised.errors, verbose), EXIT_RUN_FAILED)
    summary = runner.summary(partition)
    if materialised.attempts is not None:  # what the judge cost every attempt, and this run
        spend = {"run_id": materialised.run_id, "attempts": materialised.attempts}
        summary = summary.model_copy(update=spend)
    from n8n_deepeval_pipeline.summary.run_summary import incompleteness

    limit = runner.benchmark.checks.max_error_rate
    why = incompleteness(summary.errors, max_error_rate, limit)
    return summary.model_copy(update={"incomplete": why}), why


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
            failed: list[Refused] = []
            incomplete: list[str] = []
            for number, partition in enumerate(versions, start=1):
                start = from_asset or (None if partition in current else "metric_scores")
                what = f"from {start}" if start else "every asset"
                progress = f"[{number}/{len(versions)}] workflow {partition[:12]}: {what}"
                click.echo(progress, err=True)
                try:  # a failed version does not keep the others from being backfilled
                    ended = runner.materialise(partition, start, verbose)
                    _, why = _judged(runner, partition, ended, verbose=verbose)
                except Refused as failure:
                    failed.append(failure)
                    continue
                if why:
                    incomplete.append(f"workflow {partition[:12]}: incomplete: {why}")
    except (BenchmarkConfigError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if failed:  # one storage fault behind every failure is said once
        codes = {failure.exit_code for failure in failed}
        code = codes.pop() if len(codes) == 1 else EXIT_RUN_FAILED
        raise Refused("\n".join(dict.fromkeys(f.message for f in failed)), code)
    if incomplete:
        click.echo("\n".join(incomplete), err=True)
        sys.exit(EXIT_INCOMPLETE)
    click.echo(f"backfilled {len(versions)} version(s)")


def _current_versions(runner: Any, workflow_hash: str) -> set[str]:
    """The current workflow's version and its variants', registered."""
    if runner.benchmark.variants:
        return {member.key for member in runner.register_current_family()}
    return {runner.register_current_version(workflow_hash)}
