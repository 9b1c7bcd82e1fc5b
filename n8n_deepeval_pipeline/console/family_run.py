"""`run` for a workflow with variants: the versions called side by side, scored in turn.

The workflow (``base``) and each variant are versions of their own; ``--variant`` picks
some of them. A red team's attacks are generated once for the family, before any call
(n8n checked first, by ``run``): every version faces the same set. Then the versions'
calls overlap (``orchestration.family_run``), and each is scored in turn; once the last
is scored, the reports of those scored before it are written again, so that each report's
matrix holds every version's figures of this run.

The outcome is every version's (``VersionsOutcome``): `run` exits with the most severe of
its members' codes, 4 when a version's run failed (the others still run). A variant's
verdicts against the workflow (a regression, a breach) are said and fail nothing: it is an
alternative set beside it (`compare --variants` shows its cases); its incompleteness
fails the run as the workflow's does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline.console.exits import (
    EXIT_INVALID_CONFIG,
    Refused,
    failed_steps_refused,
)
from n8n_deepeval_pipeline.summary.outcome import (
    FailedVersion,
    Limits,
    VersionOutcome,
    VersionsOutcome,
)
from n8n_deepeval_pipeline.workflow.variants import Member

# The assets that make a red team's attack set for a version: its workflow, then the set.
_ATTACK_SET = ("workflow_snapshot", "red_team_attacks")


@dataclass(frozen=True)
class FamilyOptions:
    """How ``run`` runs the family.

    ``side_by_side``: the versions' calls in processes of their own at once (not for a
    trial, whose instance no other process sees).
    """

    side_by_side: bool
    judge_cache: bool
    verbose: bool
    limits: Limits
    regenerate_attacks: bool = False


@dataclass
class FamilyRun:
    """What a run of several versions of the workflow ended with."""

    summaries: dict[str, Any] = field(default_factory=dict)  # name → BenchmarkSummary
    outcomes: dict[str, VersionOutcome] = field(default_factory=dict)
    failed: list[FailedVersion] = field(default_factory=list)
    matrix: Any = None  # the VariantMatrix, once two versions of the family are scored
    reports: dict[str, Path] = field(default_factory=dict)  # name → the report.html written

    def fail(self, member: Member, failure: Refused) -> None:
        """Add ``member`` to the versions that failed, with why and its exit code."""
        message = f"{member.name}: {failure.message}"
        self.failed.append(
            FailedVersion(name=member.name, message=message, exit_code=failure.exit_code)
        )

    @property
    def outcome(self) -> VersionsOutcome:
        """The family's outcome: every scored version's, and the versions that failed."""
        return VersionsOutcome(
            command="run", members=tuple(self.outcomes.values()), failed=tuple(self.failed)
        )


def chosen(members: list[Member], names: tuple[str, ...]) -> list[Member]:
    """The versions ``--variant`` names (all of them without), in the benchmark's order."""
    if not names:
        return members
    known = [member.name for member in members]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise Refused(
            f"--variant {unknown[0]}: not a version of this workflow (known: {', '.join(known)})",
            EXIT_INVALID_CONFIG,
        )
    return [member for member in members if member.name in names]


def _one_attack_set(runner: Any, member: Member, options: FamilyOptions) -> None:
    """The red team's attack set, generated (or kept) once for every version of the family.

    Made in the first version's partition before any call: the versions then all find it
    kept, instead of each generating one of its own at once.
    """
    if "red_team_attacks" not in runner.asset_names():  # no red team (or a trial's)
        return
    made = runner.materialise(
        member.key,
        verbose=options.verbose,
        regenerate_attacks=options.regenerate_attacks,
        only=_ATTACK_SET,
        progress_prefix=f"[{member.name}] ",
    )
    if not made.completed:
        raise failed_steps_refused(
            made.errors, f"the red team's attack set could not be made:{_said(made.errors)}"
        )


def _said(errors: tuple[str, ...]) -> str:
    """A failed run's errors, one indented line each, once each."""
    return "".join(f"\n  {error}" for error in dict.fromkeys(errors))


def run_family(
    runner: Any,
    source: Path,
    names: tuple[str, ...],
    options: FamilyOptions,
    judged: Callable[[Any, str, Any], Any],
) -> FamilyRun:
    """Register the workflow and its variants, call the chosen ones, score each in turn.

    ``judged`` turns a version's materialisation into its summary, or refuses it (`run`'s
    own rule).
    """
    from n8n_deepeval_pipeline.orchestration.family_run import (
        SCORED_FROM,
        call_one_after_another,
        call_side_by_side,
    )
    from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError

    members = chosen(runner.register_current_family(), names)
    listed = ", ".join(f"{member.name} {member.key}" for member in members)
    click.echo(f"running {runner.benchmark.name} for {listed} …", err=True)
    _one_attack_set(runner, members[0], options)
    if options.side_by_side and len(members) > 1:
        calls = call_side_by_side(source, members, options.judge_cache, options.verbose)
    else:
        calls = call_one_after_another(runner, members, options.verbose)
    ran = FamilyRun()
    scored: list[Member] = []
    for member, called in zip(members, calls, strict=True):
        materialised = called
        if called.completed:
            materialised = runner.materialise(
                member.key,
                SCORED_FROM,
                options.verbose,
                progress_prefix=f"[{member.name}] ",
                limits=options.limits,
            )
        try:
            summary = judged(runner, member.key, materialised)
        except Refused as failure:  # the other versions are still scored
            ran.fail(member, failure)
            continue
        ran.summaries[member.name] = summary
        if materialised.report is not None:
            ran.reports[member.name] = materialised.report
        ran.outcomes[member.name] = runner.outcome(member.key, options.limits, summary=summary)
        scored.append(member)
    for member in scored[:-1]:  # their reports were written before the others were scored
        rewritten = runner.materialise(
            member.key,
            verbose=options.verbose,
            only=("benchmark_report",),
            progress_prefix=f"[{member.name}] ",
            limits=options.limits,
        )
        if not rewritten.completed:  # a failed step fails the run, as a failed scoring does
            why = f"its report could not be written again:{_said(rewritten.errors)}"
            ran.fail(member, failed_steps_refused(rewritten.errors, why))
            ran.reports.pop(member.name, None)  # the one written holds an earlier matrix
    try:
        ran.matrix = runner.variant_matrix(members[0].key)
    except UnknownVersionError:
        ran.matrix = None  # fewer than two versions of the family scored so far
    return ran


def say(ran: FamilyRun, file: Path, as_json: bool) -> None:
    """Print the first version's summary, the matrix and the reports; exit with the outcome."""
    from n8n_deepeval_pipeline.console.run_commands import said_on_stderr, say_reports
    from n8n_deepeval_pipeline.console.variant_table import (
        render_variant_matrix,
        variant_matrix_json,
    )
    from n8n_deepeval_pipeline.summary.run_summary import render_summary

    outcome = ran.outcome
    if as_json:
        printed = {
            "versions": {name: s.model_dump(mode="json") for name, s in ran.summaries.items()},
            "variants": None if ran.matrix is None else variant_matrix_json(ran.matrix),
            "outcome": outcome.model_dump(mode="json"),
        }
        click.echo(json.dumps(printed, indent=2))
    else:
        parts = []
        for name, summary in list(ran.summaries.items())[:1]:
            incomplete = ran.outcomes[name].incomplete
            kinds = [reason.kind for reason in incomplete.reasons] if incomplete else []
            parts.append(render_summary(summary, kinds))
        if ran.matrix is not None:
            parts.append(render_variant_matrix(ran.matrix))
        click.echo("\n\n".join(parts))
    say_reports(ran.reports, as_json)
    members = [(f"{name}: ", member) for name, member in ran.outcomes.items()]
    for line in said_on_stderr(members, file):
        click.echo(line, err=True)
    if ran.failed:  # a failed run is more severe than any scored version's verdict
        raise Refused("\n".join(failed.message for failed in ran.failed), outcome.exit_code)
    sys.exit(outcome.exit_code)
