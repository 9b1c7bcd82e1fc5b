"""The benchmark file's ``optimize`` section: a prompt rewritten by DeepEval's own optimiser.

``n8n-deepeval optimize`` hands the prompt of one node (an AI Agent's system message by
default) to DeepEval's ``PromptOptimizer`` with one of its algorithms (GEPA, MIPROv2,
COPRO, SIMBA; their options are DeepEval's, by the same names in camelCase), scores each
candidate with the benchmark's metrics on the training rows, within the budgets, and then
proves the best candidate on the held-out rows as a variant of the workflow.

The algorithm settings and budgets here know nothing of workflows: they are what any
text optimised against labelled examples needs.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from n8n_deepeval_pipeline.config.model import ConfigModel, NonBlank
from n8n_deepeval_pipeline.judging.spec import JudgeChoice

AlgorithmName = Literal["gepa", "miprov2", "copro", "simba"]
ALGORITHMS: tuple[str, ...] = get_args(AlgorithmName)
TieBreaker = Literal["prefer_child", "prefer_root", "random"]
AdoptWhen = Literal["significant", "better"]


def _count(default: int, description: str) -> Any:
    return Field(default=default, ge=1, le=1000, description=description)


class GepaOptions(ConfigModel):
    """GEPA: reflective mutations kept on a Pareto front (DeepEval's ``GEPA``)."""

    iterations: int = _count(5, "Mutation attempts (rounds).")
    minibatch_size: int = _count(8, "Training rows drawn (with replacement) per round.")
    pareto_size: int = _count(3, "Training rows every kept candidate is scored on.")
    patience: int = _count(3, "Stop after this many rejected mutations in a row.")
    tie_breaker: TieBreaker = Field(
        default="prefer_child", description="Among candidates of equal mean score."
    )


class Miprov2Options(ConfigModel):
    """MIPROv2: instructions and few-shot sets searched by Optuna's TPE sampler."""

    num_trials: int = _count(30, "Trials (rounds).")
    num_candidates: int = _count(10, "Instructions proposed, the original among them.")
    max_bootstrapped_demonstrations: int = _count(4, "Demonstrations kept from passing runs.")
    max_labeled_demonstrations: int = _count(4, "Demonstrations taken from expected outputs.")
    num_demonstration_sets: int = _count(5, "Few-shot sets to choose among.")
    minibatch_size: int = _count(25, "Training rows per trial.")
    minibatch_full_eval_steps: int = _count(10, "Every this many trials, the best on all rows.")


class CoproOptions(ConfigModel):
    """COPRO: coordinate ascent over proposed instructions (DeepEval's ``COPRO``)."""

    depth: int = _count(4, "Rounds of proposals.")
    breadth: int = _count(7, "Candidates proposed per round.")
    minibatch_size: int = _count(25, "Training rows per round.")


class SimbaOptions(ConfigModel):
    """SIMBA: rules and demonstrations from the rows with the most varied scores."""

    iterations: int = _count(8, "Rounds.")
    minibatch_size: int = _count(15, "Training rows per round.")
    num_candidates: int = _count(4, "Candidates per round.")
    num_samples: int = _count(3, "Runs per row to measure its variance.")
    minibatch_full_eval_steps: int = _count(4, "Every this many rounds, the best on all rows.")


AlgorithmOptions = GepaOptions | Miprov2Options | CoproOptions | SimbaOptions


class JudgeBudget(ConfigModel):
    """Caps on the judge calls a search may pay for (unset: no cap). The held-out part is apart."""

    judge_calls: int | None = Field(
        default=None,
        ge=1,
        description="Judge calls, the metrics' and the optimiser model's (cache hits are free).",
    )
    cost_usd: float | None = Field(
        default=None, gt=0, description="USD the judge calls cost, priced by their models."
    )


class OptimizeBudget(JudgeBudget):
    """Caps on what the search may spend (unset: no cap). The held-out proof is apart."""

    workflow_calls: int | None = Field(
        default=None, ge=1, description="Workflow calls (one per candidate and training row)."
    )


class HeldOutSplit(ConfigModel):
    """Which rows the search never sees: drawn at random, the same for the same seed."""

    held_out: float = Field(
        default=0.3,
        gt=0,
        lt=1,
        description="Share of the rows held out to prove the gain (at least one row; the "
        "search keeps at least two).",
    )
    seed: int = Field(default=0, description="Seed of the split (and of the algorithm).")


class AlgorithmChoice(ConfigModel):
    """DeepEval's algorithm and its options (only the chosen algorithm's may be set)."""

    algorithm: AlgorithmName = Field(
        default="gepa", description="DeepEval's algorithm: gepa, miprov2, copro or simba."
    )
    gepa: GepaOptions = Field(default=GepaOptions(), description="GEPA's options.")
    miprov2: Miprov2Options = Field(default=Miprov2Options(), description="MIPROv2's options.")
    copro: CoproOptions = Field(default=CoproOptions(), description="COPRO's options.")
    simba: SimbaOptions = Field(default=SimbaOptions(), description="SIMBA's options.")

    @model_validator(mode="after")
    def _options_of_the_algorithm(self) -> AlgorithmChoice:
        for name in ALGORITHMS:
            if name in self.model_fields_set and name != self.algorithm:
                raise ValueError(
                    f"{name}: options of another algorithm than {self.algorithm!r}; set "
                    f"algorithm: {name}, or remove them"
                )
        return self

    @property
    def options(self) -> AlgorithmOptions:
        """The chosen algorithm's options."""
        options: AlgorithmOptions = getattr(self, self.algorithm)
        return options


class OptimizeConfig(AlgorithmChoice):
    """What to optimise, with which algorithm, against which metrics, within what."""

    node: NonBlank | None = Field(
        default=None, description="The node whose prompt to optimise (default: the one AI "
        "Agent or LLM chain)."
    )  # fmt: skip
    parameter: NonBlank | None = Field(
        default=None,
        description="Its parameter path (default: an agent's options.systemMessage; a "
        "chain's system message, else its text).",
    )
    metrics: list[NonBlank] | None = Field(
        default=None,
        min_length=1,
        description="Labels of the metrics to optimise for (default: those that decide a run).",
    )
    split: HeldOutSplit = Field(default=HeldOutSplit(), description="The held-out rows.")
    budget: OptimizeBudget = Field(default=OptimizeBudget(), description="Caps on the search.")
    model: JudgeChoice | None = Field(
        default=None,
        description="The model that diagnoses and rewrites (default: the benchmark's judge).",
    )
    concurrency: int = Field(
        default=4, ge=1, le=64, description="Rows scored at once (DeepEval's max_concurrent)."
    )
    adopt_when: AdoptWhen = Field(
        default="significant",
        description="Adopt the best candidate when its held-out pass rate is significantly "
        "higher than the workflow's (one-sided Fisher p < 0.05), or merely higher.",
    )
