"""``calibration --align`` from end to end: a judge metric's text rewritten to agree with people.

1. **Plan**: the metric's rewritable text (``calibration.judge_text``), its labelled
   benchmark runs split by dataset row into training and held-out runs (seeded:
   ``calibration.align.split``), each labelled run's stored row and output, the optimiser
   model (the benchmark's judge unless ``calibration.align.model`` names another).
2. **Search** (``optimization.judge_alignment``): DeepEval's optimiser on the training
   runs, each candidate text's verdicts scored in the worker pool by the metric's judge,
   within the budget; resumable from its folder.
3. **Measure**: the metric's own text and the best one judge the held-out runs; kappa
   against every label there, before and after (``calibration.alignment_outcome``).

The resources are the CLI's (the judge and the worker pool, built from the environment as
``run`` builds them); the stored runs and labels are read through the benchmark's runner.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.calibration import AlignConfig
from n8n_deepeval_pipeline.calibration.alignment_outcome import (
    Decision,
    HeldOutAgreement,
    decision,
    held_out_agreement,
)
from n8n_deepeval_pipeline.calibration.alignment_split import (
    AlignmentSplit,
    labelled_runs,
    split_labelled,
)
from n8n_deepeval_pipeline.calibration.judge_text import NotAlignable, judge_text
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.optimization.judge_alignment import (
    AlignmentPlan,
    StoredVersion,
    held_out_verdicts,
    search,
)
from n8n_deepeval_pipeline.optimization.request import OptimizationOutcome, Round
from n8n_deepeval_pipeline.optimization.spend import Spend
from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner
from n8n_deepeval_pipeline.orchestration.prompt_optimization import (
    Resources,
    optimiser_model,
    scoring_services,
)
from n8n_deepeval_pipeline.statistics.held_out_draw import SplitError
from n8n_deepeval_pipeline.tables.steps import snapshot_tools
from n8n_deepeval_pipeline.workflow.hashing import version_key


class AlignmentRefused(ValueError):
    """The metric cannot be aligned with these labels (the message says why, in one line)."""


@dataclass(frozen=True)
class Alignment:
    """What the search found, and kappa on the held-out runs before and after."""

    plan: AlignmentPlan
    outcome: OptimizationOutcome
    before: HeldOutAgreement
    after: HeldOutAgreement
    held_out_spend: Spend
    decision: Decision

    @property
    def judge_calls(self) -> int:
        """Every judge call paid for: the search's (metric and optimiser) and the held-out's."""
        return self.outcome.spend.judge_calls + self.held_out_spend.judge_calls


def _metric(runner: BenchmarkRunner, metric: str) -> MetricConfig:
    benchmark = runner.benchmark
    if metric not in benchmark.metric_labels:
        raise AlignmentRefused(
            f"--align {metric}: not one of the benchmark's metrics "
            f"({', '.join(benchmark.metric_labels)})"
        )
    return benchmark.metrics[benchmark.metric_labels.index(metric)]


def _split(runner: BenchmarkRunner, metric: str, align: AlignConfig) -> AlignmentSplit:
    runs = labelled_runs(runner.label_store().judged(), metric)
    try:
        split = split_labelled(runs, align.split.held_out, align.split.seed)
    except SplitError as error:
        raise AlignmentRefused(
            f"--align {metric}: labelled runs of {error} (label runs of more rows)"
        ) from None
    problem = split.problem()
    if problem is not None:
        raise AlignmentRefused(f"--align {metric}: {problem}")
    return split


def _stored(runner: BenchmarkRunner, split: AlignmentSplit) -> dict[str, StoredVersion]:
    """Each labelled version's stored runs, rows, outputs, tools and images."""
    stored = {}
    for workflow_hash in sorted({run.workflow_hash for run in split.training + split.held_out}):
        version = version_key(workflow_hash)
        tables = runner.runs_to_review(version)
        stored[workflow_hash] = StoredVersion(
            runs=list(tables.runs),
            rows=list(tables.dataset),
            outputs=list(tables.outputs),
            tools=snapshot_tools(runner.snapshots([version])),
            images=runner.output_images(version),
        )
    return stored


def plan_alignment(runner: BenchmarkRunner, metric: str, resources: Resources) -> AlignmentPlan:
    """The metric's text, its labelled runs split, their stored runs, the optimiser model.

    ``AlignmentRefused`` when the metric has no text to rewrite, its judge gives only
    placeholders, or its labels cannot show an improvement on held-out rows.
    """
    benchmark = runner.benchmark
    config = _metric(runner, metric)
    try:
        text = judge_text(config)
    except NotAlignable as error:
        raise AlignmentRefused(f"--align {error}") from None
    judges = [resources.judge.spec_for(choice.over(benchmark.judge) if choice else benchmark.judge)
              for choice in config.judge_choices()]  # fmt: skip
    if any(judge.is_dry_run for judge in judges):
        raise AlignmentRefused(
            f"--align {metric}: its judge is the dry-run judge, whose placeholder verdicts "
            "agree with nobody: name a judge (N8N_DEEPEVAL_JUDGE_PROVIDER, judge:)"
        )
    calibration = benchmark.calibration
    align = calibration.align if calibration is not None else AlignConfig()
    split = _split(runner, metric, align)
    model = optimiser_model(resources, benchmark, align.model)
    return AlignmentPlan(benchmark, config, text, split, _stored(runner, split), model)


def alignment_folder(plan: AlignmentPlan) -> Path:
    """Where a search keeps its journals and outcome."""
    return settings.home() / "align" / plan.benchmark.name / plan.key()


def run_alignment(
    plan: AlignmentPlan,
    resources: Resources,
    folder: Path,
    on_round: Callable[[Round], None] | None = None,
) -> Alignment:
    """DeepEval's search of the metric's text, then kappa on the held-out runs before and after."""
    services = scoring_services(resources)
    outcome = search(plan, services, folder, on_round)
    (before, after), spent = held_out_verdicts(
        plan, services, folder, [plan.text.text, outcome.best_text]
    )
    runs = plan.split.held_out
    measured_before = held_out_agreement(runs, before)
    measured_after = held_out_agreement(runs, after)
    alignment = Alignment(
        plan=plan,
        outcome=outcome,
        before=measured_before,
        after=measured_after,
        held_out_spend=spent,
        decision=decision(measured_before, measured_after, outcome.improved),
    )
    record = {
        "outcome": outcome.model_dump(mode="json"),
        "before": measured_before.model_dump(mode="json"),
        "after": measured_after.model_dump(mode="json"),
        "held_out_spend": spent.model_dump(mode="json"),
        "decision": alignment.decision,
    }
    (folder / "outcome.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return alignment
