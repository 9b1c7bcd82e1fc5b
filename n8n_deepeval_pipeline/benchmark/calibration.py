"""The benchmark file's ``calibration`` section: when a judge-backed metric may decide runs.

A metric is *calibrated* when people's labels of its runs agree with its judge beyond
chance: the lower bound of the 95% interval of Cohen's kappa between the judge's verdicts
and the labels is at least ``minKappa``, over at least ``minLabels`` labels. With ``gate``
on, only calibrated metrics decide runs and regressions (``compare.failOn``).

``align`` says how ``calibration --align METRIC`` rewrites a G-Eval's or a DAG's text with
DeepEval's ``PromptOptimizer`` so that its judge agrees with the labels: the algorithm and
its options (as the ``optimize`` section's), the held-out rows, the budget, the model.
"""

from __future__ import annotations

from pydantic import Field

from n8n_deepeval_pipeline.benchmark.optimize import AlgorithmChoice, HeldOutSplit, JudgeBudget
from n8n_deepeval_pipeline.config.model import ConfigModel
from n8n_deepeval_pipeline.judging.spec import JudgeChoice


class AlignConfig(AlgorithmChoice):
    """How a judge metric's criteria are rewritten to agree with people's labels."""

    split: HeldOutSplit = Field(
        default=HeldOutSplit(),
        description="The dataset rows whose labelled runs are held out to measure kappa "
        "before and after (a row's repeated runs never straddle the split).",
    )
    budget: JudgeBudget = Field(
        default=JudgeBudget(),
        description="Caps on the search's judge calls and cost (the held-out kappa is apart).",
    )
    model: JudgeChoice | None = Field(
        default=None,
        description="The model that diagnoses and rewrites (default: the benchmark's judge).",
    )
    concurrency: int = Field(
        default=4, ge=1, le=64, description="Runs judged at once (DeepEval's max_concurrent)."
    )


class CalibrationConfig(ConfigModel):
    """How much the judge must agree with people before its verdicts count."""

    min_kappa: float = Field(
        default=0.6,
        ge=-1,
        le=1,
        description="The lowest acceptable lower bound of the 95% interval of Cohen's kappa "
        "between the judge and people (0.6: 'substantial' agreement on Landis and Koch's scale).",
    )
    min_labels: int = Field(
        default=30,
        ge=1,
        description="Labels a metric needs before it can be calibrated (fewer: it is "
        "uncalibrated, and says how many more it needs).",
    )
    gate: bool = Field(
        default=False,
        description="Only calibrated judge-backed metrics decide runs and regressions "
        "(compare.failOn); uncalibrated ones are reported beside them. Off: every metric "
        "decides as the pass rule says, and calibration is only reported.",
    )
    align: AlignConfig = Field(
        default=AlignConfig(),
        description="How `calibration --align METRIC` rewrites a G-Eval's or DAG's text to "
        "agree with the labels.",
    )
