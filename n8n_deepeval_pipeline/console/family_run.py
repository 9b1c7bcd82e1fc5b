"""`run` for a workflow with variants: the versions called side by side, scored in turn.

The workflow (``base``) and each variant are versions of their own; ``--variant`` picks
some of them. Their calls overlap (``orchestration.family_run``), then each is scored;
the first one's summary is printed, then the matrix of the workflow and its variants.
Exit codes are `run`'s, read so: 4 if a version's run failed (the others still run), 3 if
one is incomplete, 5 if the workflow itself regressed against its previous version, 1 if
its pass rate is below --fail-under. A variant worse than the workflow fails nothing: it
is an alternative set beside it (`compare --variants` shows its cases).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline.console.exits import (
    EXIT_BELOW_FAIL_UNDER,
    EXIT_INCOMPLETE,
    EXIT_INVALID_CONFIG,
    EXIT_RUN_FAILED,
    EXIT_RUN_REGRESSION,
    Refused,
)
from n8n_deepeval_pipeline.workflow.variants import BASE, Member


@dataclass
class FamilyRun:
    """What a run of several versions of the workflow ended with."""

    summaries: dict[str, Any] = field(default_factory=dict)  # name → BenchmarkSummary
    failed: list[str] = field(default_factory=list)  # why a version's run failed
    incomplete: list[str] = field(default_factory=list)
    regressed: bool = False  # the workflow itself, against its previous version
    matrix: Any = None  # the VariantMatrix, once two versions of the family are scored


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


def run_family(
    runner: Any,
    source: Path,
    names: tuple[str, ...],
    side_by_side: bool,
    judge_cache: bool,
    verbose: bool,
    judged: Any,
) -> FamilyRun:
    """Register the workflow and its variants, call the chosen ones, score each in turn.

    ``side_by_side``: their calls in processes of their own at once (not for a trial,
    whose instance no other process sees); ``judged`` turns a version's materialisation
    into its summary and why it is incomplete (`run`'s own rule).
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
    if side_by_side and len(members) > 1:
        calls = call_side_by_side(source, members, judge_cache, verbose)
    else:
        calls = call_one_after_another(runner, members, verbose)
    outcome = FamilyRun()
    for member, called in zip(members, calls, strict=True):
        materialised = called
        if called.completed:
            materialised = runner.materialise(
                member.key, SCORED_FROM, verbose, progress_prefix=f"[{member.name}] "
            )
        try:
            summary, incomplete = judged(runner, member.key, materialised)
        except Refused as failure:  # the other versions are still scored
            outcome.failed.append(f"{member.name}: {failure.message}")
            continue
        outcome.summaries[member.name] = summary
        if incomplete:
            outcome.incomplete.append(f"{member.name}: {incomplete}")
        if member.variant is None and "no_regression" in materialised.failed_checks:
            outcome.regressed = True
    try:
        outcome.matrix = runner.variant_matrix(members[0].key)
    except UnknownVersionError:
        outcome.matrix = None  # fewer than two versions of the family scored so far
    return outcome


def say(outcome: FamilyRun, as_json: bool, gate: str, fail_under: float | None) -> None:
    """Print the first version's summary and the matrix; exit as `run` does."""
    from n8n_deepeval_pipeline.console.variant_table import (
        render_variant_matrix,
        variant_matrix_json,
    )
    from n8n_deepeval_pipeline.summary.run_summary import render_summary

    if as_json:
        printed = {
            "versions": {name: s.model_dump(mode="json") for name, s in outcome.summaries.items()},
            "variants": None if outcome.matrix is None else variant_matrix_json(outcome.matrix),
        }
        click.echo(json.dumps(printed, indent=2))
    else:
        parts = [render_summary(summary) for summary in list(outcome.summaries.values())[:1]]
        if outcome.matrix is not None:
            parts.append(render_variant_matrix(outcome.matrix))
        click.echo("\n\n".join(parts))
    if outcome.regressed:
        click.echo(f"{gate} against the previous version: see `n8n-deepeval compare`", err=True)
    if outcome.failed:
        raise Refused("\n".join(outcome.failed), EXIT_RUN_FAILED)
    if outcome.incomplete:
        click.echo("\n".join(outcome.incomplete), err=True)
        sys.exit(EXIT_INCOMPLETE)
    if outcome.regressed:
        sys.exit(EXIT_RUN_REGRESSION)
    base = outcome.summaries.get(BASE)
    if fail_under is not None and base is not None and base.pass_rate < fail_under:
        click.echo(f"pass rate {base.pass_rate:.1%} is below {fail_under:.1%}", err=True)
        sys.exit(EXIT_BELOW_FAIL_UNDER)
