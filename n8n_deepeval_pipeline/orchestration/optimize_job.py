"""The ``…__optimize`` job: ``n8n-deepeval optimize`` launched from the Dagster UI.

One job per benchmark whose target is an ``n8n_workflow`` (a prompt can be set on its
harness copy). Its launch config (``OptimizeRunConfig``) takes the ``optimize`` section's
choices, each over the file's own; the algorithm's options stay the file's. The search
reports each round as a materialisation of ``<benchmark>/prompt_optimization`` whose
metadata the UI charts across events (best score, candidates, calls, cost), and the
search's end as one more, with the held-out verdict and the prompt's diff. With
``adopt`` the winner is written into the benchmark file, as the CLI writes it.
"""

# No ``from __future__ import annotations``: Dagster reads the op's config type at run time.
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from n8n_deepeval_pipeline.benchmark.config import Benchmark, load_benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.benchmark.optimize import OptimizeConfig
from n8n_deepeval_pipeline.optimization.request import OptimizationOutcome, Round
from n8n_deepeval_pipeline.orchestration import prompt_optimization as flow
from n8n_deepeval_pipeline.orchestration.metadata_figures import shown
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.worker_pool import WorkerPoolResource
from n8n_deepeval_pipeline.summary.held_out import HeldOutProof

SEARCH_ASSET = "prompt_optimization"


class OptimizeRunConfig(dg.Config):
    """What a launch may choose; unset, the benchmark file's ``optimize`` section decides."""

    node: str | None = Field(default=None, description="The node whose prompt to optimise.")
    parameter: str | None = Field(default=None, description="Its parameter path.")
    # Plain text (Dagster's config takes no Literal): checked with the section's model.
    algorithm: str | None = Field(
        default=None, description="gepa, miprov2, copro or simba (its options: the file's)."
    )
    seed: int | None = Field(default=None, description="Seed of the split and the algorithm.")
    held_out: float | None = Field(default=None, description="Share of rows held out.")
    workflow_calls: int | None = Field(default=None, description="Cap on workflow calls.")
    judge_calls: int | None = Field(default=None, description="Cap on judge calls.")
    cost_usd: float | None = Field(default=None, description="Cap on the judge's cost (USD).")
    adopt_when: str | None = Field(
        default=None, description="When the best candidate is adopted: significant or better."
    )
    fresh: bool = Field(default=False, description="Start over instead of resuming.")
    adopt: bool = Field(
        default=False,
        description="Write an adopted candidate into the benchmark file (target.variants).",
    )

    def applied(self, benchmark: Benchmark) -> Benchmark:
        """The benchmark with this launch's choices over its file's ``optimize`` section."""
        section: dict[str, Any] = (
            benchmark.optimize.model_dump(exclude_unset=True) if benchmark.optimize else {}
        )
        chosen = {"algorithm": self.algorithm, "adopt_when": self.adopt_when}
        section.update({key: value for key, value in chosen.items() if value is not None})
        nested = {
            "split": {"seed": self.seed, "held_out": self.held_out},
            "budget": {
                "workflow_calls": self.workflow_calls,
                "judge_calls": self.judge_calls,
                "cost_usd": self.cost_usd,
            },
        }
        for name, values in nested.items():
            given = {key: value for key, value in values.items() if value is not None}
            if given:
                section[name] = {**dict(section.get(name) or {}), **given}
        config = OptimizeConfig.model_validate(section, strict=False)
        return flow.with_choices(
            benchmark.model_copy(update={"optimize": config}), self.node, self.parameter
        )


def optimizable(benchmark: Benchmark) -> bool:
    """Whether the benchmark's workflow can be optimised (its prompt set on a harness copy)."""
    return isinstance(benchmark.target, WorkflowTarget) and benchmark.simulation is None


def search_asset(benchmark: Benchmark) -> dg.AssetSpec:
    """The asset the search's rounds are materialisations of (made by the job, not a step)."""
    return dg.AssetSpec(
        [benchmark.name, SEARCH_ASSET],
        group_name=benchmark.name,
        description="The prompt searches of `optimize`: a materialisation per round (best "
        "score, candidates, calls, cost), then the held-out verdict.",
    )


def _round_metadata(found: Round) -> dict[str, Any]:
    spend = found.spend
    return shown(
        {
            "round": found.number,
            "rounds": found.total,
            "best_score": found.best_score,
            "candidates": found.candidates,
            "workflow_calls": spend.answer_calls,
            "judge_calls": spend.judge_calls,
            "cached_judge_calls": spend.cached_judge_calls,
            "cost_usd": spend.cost_usd,
        }
    )


def _end_metadata(outcome: OptimizationOutcome, proof: HeldOutProof | None) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "stop": outcome.stop,
        "best_score": outcome.best_score,
        "base_score": outcome.base_score,
        "candidates": len(outcome.tried),
        "workflow_calls": outcome.spend.answer_calls,
        "judge_calls": outcome.spend.judge_calls,
        "cost_usd": outcome.spend.cost_usd,
    }
    if proof is not None:
        figures.update(
            {
                "held_out/verdict": proof.verdict,
                "held_out/adopted": proof.adopted,
                "held_out/p_value": proof.p_value_rise,
                "held_out/base_pass_rate": proof.base.pass_rate.rate,
                "held_out/candidate_pass_rate": proof.candidate.pass_rate.rate,
            }
        )
    metadata = shown({k: v for k, v in figures.items() if v is not None})
    diff = outcome.diff()
    metadata["prompt_diff"] = dg.MetadataValue.md(f"```diff\n{diff}\n```")
    return metadata


def build_optimize_job(benchmark: Benchmark, source: Path) -> dg.JobDefinition:
    """The benchmark's ``…__optimize`` job."""
    key = dg.AssetKey([benchmark.name, SEARCH_ASSET])

    @dg.op(name=f"{benchmark.name}__optimize_prompt", description="Search, prove, adopt.")
    def optimize_prompt(
        context: dg.OpExecutionContext,
        config: OptimizeRunConfig,
        n8n: N8nResource,
        judge: JudgeResource,
        worker_pool: WorkerPoolResource,
    ) -> None:
        chosen = config.applied(load_benchmark(source))
        resources = flow.Resources(n8n=n8n, judge=judge, pool=worker_pool)
        plan = flow.plan_search(chosen, source, resources)
        folder = flow.search_folder(plan)
        if config.fresh:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)

        def reported(found: Round) -> None:
            context.log.info(f"round {found.number}/{found.total}: best {found.best_score}")
            context.log_event(dg.AssetMaterialization(key, metadata=_round_metadata(found)))

        outcome = flow.run_search(plan, resources, folder, reported, context.log.warning)
        proof = (
            flow.prove_on_held_out(plan, source, outcome.best_text, folder)
            if outcome.improved
            else None
        )
        if proof is not None and proof.adopted and config.adopt:
            name = flow.adopt_into_file(source, chosen, plan, outcome.best_text)
            context.log.info(f"adopted: target.variants.{name} in {source}")
        context.log_event(dg.AssetMaterialization(key, metadata=_end_metadata(outcome, proof)))

    @dg.job(
        name=f"{benchmark.name}__optimize",
        description="Rewrite a prompt of the workflow with DeepEval's PromptOptimizer on the "
        "training rows (every side-effect node mocked), prove the best on the held-out rows.",
        tags={"n8n_deepeval/benchmark": benchmark.name},
    )
    def optimize_job() -> None:
        optimize_prompt()

    return optimize_job
