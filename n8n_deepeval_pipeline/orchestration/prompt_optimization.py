"""``optimize`` from end to end, as the CLI and the Dagster job both run it.

1. **Plan**: the workflow as it is now (n8n or its file), the prompt's node and parameter,
   the dataset's rows split into training and held-out rows, the optimiser model (the
   benchmark's judge unless ``optimize.model`` names another).
2. **Search** (``optimization.workflow_search``): DeepEval's optimiser on the training rows,
   each candidate answered by the workflow's harness copy, scored in the worker pool, within
   the budgets; resumable from its folder.
3. **Prove**: the best candidate, added as a variant, runs beside the workflow on the
   held-out rows only, ``runsPerRow`` times, through the benchmark's own assets in a
   throwaway instance kept in the search's folder (``proof/``); their variant matrix gives
   the held-out verdict (``summary.held_out``).

The resources are the run's: n8n, the judge, the worker pool (the CLI builds them from the
environment as ``run`` does).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark, load_benchmark, resolve_paths
from n8n_deepeval_pipeline.benchmark.optimize import OptimizeConfig
from n8n_deepeval_pipeline.config.errors import pointed_to_by
from n8n_deepeval_pipeline.config.yaml_edit import with_entry
from n8n_deepeval_pipeline.config.yaml_loader import load_yaml
from n8n_deepeval_pipeline.judging.spec import JudgeChoice, JudgeSpec
from n8n_deepeval_pipeline.optimization.pool_scoring import ScoringServices
from n8n_deepeval_pipeline.optimization.request import OptimizationOutcome, Round
from n8n_deepeval_pipeline.optimization.workflow_answers import digest
from n8n_deepeval_pipeline.optimization.workflow_search import (
    SearchPlan,
    SearchServices,
    search,
    split_rows,
)
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.score_journal import FileScoreJournal
from n8n_deepeval_pipeline.orchestration.resources.worker_pool import WorkerPoolResource
from n8n_deepeval_pipeline.summary.held_out import HeldOutProof, held_out_proof
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.row_selection import RowSelection
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.prompt_parameter import prompt_parameter
from n8n_deepeval_pipeline.workflow.variants import BASE, apply_variant

CANDIDATE = "optimized"  # the candidate's name beside the workflow in the proof


class ProofFailed(RuntimeError):
    """The held-out runs of the workflow or the candidate failed (the errors say why)."""


@dataclass(frozen=True)
class Resources:
    """What optimising calls on: n8n, the judge, the worker pool."""

    n8n: N8nResource
    judge: JudgeResource
    pool: WorkerPoolResource


def cli_resources(judge_cache: bool = True) -> Resources:
    """The resources a CLI run uses, their settings read from the environment as ``run``'s."""
    from n8n_deepeval_pipeline.orchestration.definitions import build_resources

    built = build_resources(judge_cache)

    def resolved(name: str) -> Any:
        return built[name].process_config_and_initialize()  # type: ignore[attr-defined]

    # The pool's settings are plain values; outside a Dagster step it makes its own pool.
    pool = built["worker_pool"]
    assert isinstance(pool, WorkerPoolResource)
    return Resources(n8n=resolved("n8n"), judge=resolved("judge"), pool=pool)


def with_choices(
    benchmark: Benchmark, node: str | None = None, parameter: str | None = None
) -> Benchmark:
    """The benchmark with its ``optimize`` section (or the defaults), node and parameter set.

    The command line's ``--node`` and ``--parameter`` win over the section's.
    """
    config = benchmark.optimize or OptimizeConfig()
    update = {key: value for key, value in (("node", node), ("parameter", parameter)) if value}
    return benchmark.model_copy(update={"optimize": config.model_copy(update=update)})


def plan_search(benchmark: Benchmark, source: Path, resources: Resources) -> SearchPlan:
    """The workflow, the prompt, the split and the model of a search."""
    config = benchmark.optimize
    assert config is not None  # with_choices fills it
    workflow, _ = resources.n8n.workflow(benchmark)
    parameter = prompt_parameter(workflow, config.node, config.parameter)
    dataset = benchmark.runs_dataset
    records = resources.n8n.dataset_records(dataset)
    with pointed_to_by(source):
        rows = steps.dataset_rows(dataset, workflow_hash(workflow), records)
    split = split_rows(rows, config.split.held_out, config.split.seed)
    model = optimiser_model(resources, benchmark, config.model)
    return SearchPlan(benchmark, workflow, parameter, split, model)


def optimiser_model(
    resources: Resources, benchmark: Benchmark, choice: JudgeChoice | None
) -> JudgeSpec:
    """The model that diagnoses and rewrites: ``choice`` over the benchmark's judge, or it.

    Its cache is the shared one (a search is no run index to re-sample per); ``optimize``
    and ``calibration --align`` both choose it here.
    """
    chosen = choice.over(benchmark.judge) if choice is not None else benchmark.judge
    return resources.judge.spec_for(chosen).model_copy(update={"cache_scope": "shared"})


def scoring_services(resources: Resources) -> ScoringServices:
    """What scores a search's answers: the run's judge, prices and worker pool, a journal."""
    return ScoringServices(
        judge=resources.judge.spec_for,
        prices=resources.judge.prices(),
        pool=resources.pool.pool,
        score_journal=FileScoreJournal,
        evaluation_timeout_s=resources.pool.timeout_s,
    )


def search_folder(plan: SearchPlan) -> Path:
    """Where a search keeps its journals, outcome and proof."""
    return settings.home() / "optimize" / plan.benchmark.name / plan.key()


def run_search(
    plan: SearchPlan,
    resources: Resources,
    folder: Path,
    on_round: Callable[[Round], None] | None = None,
    on_stale: Callable[[str], None] | None = None,
) -> OptimizationOutcome:
    """DeepEval's search of the plan, with the run's n8n, judge and worker pool."""
    n8n = resources.n8n
    services = SearchServices(n8n.client, n8n.base_url or "", scoring_services(resources))
    outcome = search(plan, services, folder, on_round, on_stale)
    (folder / "outcome.json").write_text(outcome.model_dump_json(indent=2), encoding="utf-8")
    return outcome


def proof_benchmark(source: Path, plan: SearchPlan, text: str, folder: Path) -> Path:
    """The benchmark file with the candidate as a variant, written into ``folder``.

    Paths are made absolute, so that the copy reads the user's workflow and dataset.
    """
    document = dict(load_yaml(source.read_text(encoding="utf-8")))
    resolve_paths(document, source.parent.resolve())
    target = dict(document["target"])
    target["variants"] = {CANDIDATE: plan.parameter.overrides(text)}  # the base and it alone
    document["target"] = target
    document.pop("sink", None)  # the proof writes nothing back to n8n
    path = folder / "proof.benchmark.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), "utf-8")
    return path


def prove_on_held_out(
    plan: SearchPlan,
    source: Path,
    text: str,
    folder: Path,
    judge_cache: bool = True,
    verbose: bool = False,
) -> HeldOutProof:
    """The candidate against the workflow on the held-out rows, each a version of its own."""
    # Imported here: the runner builds Definitions, which hold the optimize job.
    from n8n_deepeval_pipeline.orchestration.family_run import SCORED_FROM, call_one_after_another
    from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner, trial_instance

    config = plan.benchmark.optimize
    assert config is not None
    path = proof_benchmark(source, plan, text, folder)
    benchmark = load_benchmark(path)
    held_out = [row.row_id for row in plan.split.held_out]
    selection = RowSelection(include=tuple(held_out), exact=True)
    before = os.environ.get(settings.HOME_ENV)
    with trial_instance(benchmark.name, folder / "proof") as instance:
        runner = BenchmarkRunner(benchmark, path, instance, judge_cache, selection)
        members = runner.register_current_family()
        calls = call_one_after_another(runner, members, verbose)
        for member, called in zip(members, calls, strict=True):
            scored = called
            if called.completed:
                prefix = f"[{member.name}] "
                scored = runner.materialise(
                    member.key, SCORED_FROM, verbose, progress_prefix=prefix
                )
            if not scored.completed:
                errors = "; ".join(dict.fromkeys(scored.errors)) or "see --verbose"
                raise ProofFailed(f"the held-out run of {member.name} failed: {errors}")
        matrix = runner.variant_matrix(members[0].key)
    assert os.environ.get(settings.HOME_ENV) == before
    return held_out_proof(matrix, CANDIDATE, held_out, benchmark.runs_per_row, config.adopt_when)


def candidate_name(benchmark: Benchmark, text: str) -> str:
    """A name for the adopted candidate that no variant of the benchmark has yet."""
    taken = {BASE, *benchmark.variants}
    name = f"optimized_{digest(text)[:6]}"
    return name if name not in taken else f"{name}_{len(taken)}"


def adopt_into_file(file: Path, benchmark: Benchmark, plan: SearchPlan, text: str) -> str:
    """The candidate written into the benchmark file as a new ``target.variants`` entry.

    Inserted as text (``config.yaml_edit``): every other line stays as the user wrote it.
    Its name; ``YamlEditError`` when that cannot be done without rewriting the file.
    """
    name = candidate_name(benchmark, text)
    edited = with_entry(
        file.read_text(encoding="utf-8"),
        ("target", "variants"),
        name,
        plan.parameter.overrides(text),
    )
    temporary = file.with_name(f".{file.name}.optimize")
    temporary.write_text(edited, encoding="utf-8")
    temporary.replace(file)
    return name


def write_workflow(plan: SearchPlan, text: str, out: Path) -> None:
    """The workflow with the candidate at the prompt's parameter, as JSON to import into n8n."""
    edited = apply_variant(plan.workflow, plan.parameter.overrides(text))
    out.write_text(json.dumps(edited, indent=2, ensure_ascii=False), encoding="utf-8")
