"""`optimize`: a prompt of the workflow rewritten by DeepEval's optimiser, proven, adopted.

The search runs on the training rows (a line per round on stderr: best score so far,
candidates, calls and cost); the best candidate is then proven against the workflow on the
held-out rows (``orchestration.prompt_optimization``). Adopted (its verdict is one
``optimize.adoptWhen`` accepts), it is written as a ``target.variants`` entry into the
benchmark file, inserted as text so that the file's comments and layout stay as they were
(``config.yaml_edit``), or with ``--write-workflow OUT`` as the edited workflow's JSON to
import into n8n. The report shows the prompt's diff against the workflow's and the verdict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import (
    EXIT_INVALID_CONFIG,
    EXIT_NOT_ADOPTED,
    EXIT_RUN_FAILED,
    Refused,
    exit_codes_stated,
    n8n_unreachable_refused,
    storage_faults_refused,
)


def round_line(report: Any) -> str:
    """One round of the search, as the progress line says it."""
    spend = report.spend
    best = f"{report.best_score:.3f}" if report.best_score is not None else "-"
    cost = f"${spend.cost_usd:.4f}" + (" + unpriced" if spend.unpriced_models else "")
    return (
        f"round {report.number}/{report.total} · best {best} · candidates {report.candidates} · "
        f"workflow calls {spend.answer_calls} (+{spend.replayed_answers} replayed) · judge calls "
        f"{spend.judge_calls} (+{spend.cached_judge_calls} cached) · {cost}"
    )


def search_summary(plan: Any, outcome: Any) -> str:
    """What the search did, found and spent."""
    spend = outcome.spend
    config = plan.benchmark.optimize
    base = f"{outcome.base_score:.3f}" if outcome.base_score is not None else "-"
    best = f"{outcome.best_score:.3f}" if outcome.best_score is not None else "-"
    unpriced = f" (unpriced: {', '.join(spend.unpriced_models)})" if spend.unpriced_models else ""
    return "\n".join(
        [
            f"optimize {plan.benchmark.name} · {plan.parameter.node} · {plan.parameter.path} · "
            f"{config.algorithm} (seed {config.split.seed}) · {len(plan.split.training)} "
            f"training rows, {len(plan.split.held_out)} held out",
            f"search: {len(outcome.rounds)} rounds · {len(outcome.tried)} candidates · "
            f"{outcome.ended} · {outcome.seconds:.1f} s",
            f"  workflow calls {spend.answer_calls} (+{spend.replayed_answers} replayed) · "
            f"judge calls {spend.judge_calls} (+{spend.cached_judge_calls} cached, "
            f"{spend.replayed_scores} scores replayed) · tokens "
            f"{spend.prompt_tokens + spend.completion_tokens} · cost ${spend.cost_usd:.4f}"
            f"{unpriced}",
            f"mean score on the validation rows: workflow's prompt {base} · best {best}",
        ]
    )


def _adopt(file: Path, benchmark: Any, plan: Any, text: str, write_workflow: Path | None) -> str:
    """Write the candidate where it is asked for; what was written, in words."""
    from n8n_deepeval_pipeline.config.yaml_edit import YamlEditError
    from n8n_deepeval_pipeline.orchestration import prompt_optimization as flow

    if write_workflow is not None:
        flow.write_workflow(plan, text, write_workflow)
        return f"adopted: the edited workflow is in {write_workflow} (import it into n8n)"
    try:
        name = flow.adopt_into_file(file, benchmark, plan, text)
    except YamlEditError as error:
        entry = json.dumps({"variants": {"optimized": plan.parameter.overrides(text)}}, indent=2)
        raise Refused(
            f"{file}: cannot add the variant without rewriting the file ({error}); add it "
            f"under target by hand:\n{entry}",
            EXIT_RUN_FAILED,
        ) from None
    return f"adopted: target.variants.{name} in {file} (`n8n-deepeval run {file}` runs it)"


@exit_codes_stated("optimize")
@click.command()
@click.argument("file", type=benchmarks.EXISTING_FILE)
@click.option("--node", help="The node whose prompt to optimise (default: optimize.node, else "
              "the one AI Agent or LLM chain).")  # fmt: skip
@click.option("--parameter", help="Its parameter path (default: optimize.parameter, else the "
              "agent's options.systemMessage, a chain's system message or text).")  # fmt: skip
@click.option(
    "--write-workflow",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Adopt by writing the edited workflow's JSON here, instead of a target.variants "
    "entry in FILE.",
)
@click.option("--fresh", is_flag=True, help="Start the search over instead of resuming it.")
@click.option("--no-cache", is_flag=True, help="Ask the judge again instead of reusing answers.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome and the proof as JSON.")
@benchmarks.verbose_option
@n8n_unreachable_refused
@storage_faults_refused
def optimize(
    file: Path,
    node: str | None,
    parameter: str | None,
    write_workflow: Path | None,
    fresh: bool,
    no_cache: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Rewrite a prompt of FILE's workflow with DeepEval's optimiser; prove it; adopt it.

    The search scores candidates on the training rows, every side-effect node mocked;
    the best is run against the workflow on the held-out rows, and adopted only if it
    proves better there.
    """
    import shutil

    from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
    from n8n_deepeval_pipeline.orchestration import prompt_optimization as flow
    from n8n_deepeval_pipeline.statistics.held_out_draw import SplitError
    from n8n_deepeval_pipeline.summary.held_out import render_held_out
    from n8n_deepeval_pipeline.worker.launcher import ChildFailed
    from n8n_deepeval_pipeline.workflow.prompt_parameter import PromptParameterError

    try:
        benchmark, checked = benchmarks.check(file, for_run=True)
        if not isinstance(benchmark.target, WorkflowTarget) or benchmark.simulation is not None:
            raise Refused(
                f"{file}: optimize sets candidates on the workflow's harness copy and scores "
                "one answer per row: it needs an n8n_workflow target and no simulation",
                EXIT_INVALID_CONFIG,
            )
        benchmark = flow.with_choices(benchmark, node, parameter)
        resources = flow.cli_resources(not no_cache)
        plan = flow.plan_search(benchmark, file, resources)
    except BenchmarkConfigError as error:
        raise Refused(str(error), EXIT_INVALID_CONFIG) from None
    except (PromptParameterError, SplitError) as error:
        field = f"optimize.{error.field}: " if isinstance(error, PromptParameterError) else ""
        raise Refused(f"{file}: {field}{error}", EXIT_INVALID_CONFIG) from None
    benchmarks.warn(file, checked.warnings)
    folder = flow.search_folder(plan)
    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    click.echo(f"searching {len(plan.split.training)} training rows; kept in {folder}", err=True)

    def said(report: Any) -> None:
        click.echo(round_line(report), err=True)

    def stale(name: str) -> None:
        click.echo(f"removed a harness copy whose run is over: {name}", err=True)

    try:
        outcome = flow.run_search(plan, resources, folder, said, stale)
    except ChildFailed as failed:  # the optimiser's process: its exit code and last lines
        raise Refused(failed.message, EXIT_RUN_FAILED) from None
    finally:
        resources.pool.pool.close()
    proof = None
    if outcome.improved:
        click.echo(f"proving the best candidate on {len(plan.split.held_out)} held-out rows …",
                   err=True)  # fmt: skip
        try:
            proof = flow.prove_on_held_out(
                plan, file, outcome.best_text, folder, not no_cache, verbose
            )
        except flow.ProofFailed as error:
            raise Refused(str(error), EXIT_RUN_FAILED) from None
    adopted = _adopt(file, benchmark, plan, outcome.best_text, write_workflow) if (
        proof is not None and proof.adopted
    ) else None  # fmt: skip
    if as_json:
        printed = {
            "outcome": outcome.model_dump(mode="json"),
            "proof": proof.model_dump(mode="json") if proof is not None else None,
            "adopted": adopted,
            "folder": str(folder),
        }
        click.echo(json.dumps(printed, indent=2))
    else:
        parts = [search_summary(plan, outcome), outcome.diff()]
        if proof is not None:
            parts.append(render_held_out(proof))
        click.echo("\n\n".join(parts))
    if adopted is not None:
        click.echo(adopted, err=True)
        return
    why = (
        "no candidate beat the workflow's prompt on the training rows: nothing to prove"
        if proof is None
        else f"the candidate is reported, not adopted (held out: {proof.verdict}, adoptWhen: "
        f"{benchmark.optimize.adopt_when if benchmark.optimize else 'significant'})"
    )
    click.echo(why, err=True)
    sys.exit(EXIT_NOT_ADOPTED)
