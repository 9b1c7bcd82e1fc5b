"""The benchmark file's ``calibration`` section: when a judge-backed metric may decide runs.

A metric is *calibrated* when people's labels of its runs agree with its judge beyond
chance: the lower bound of the 95% interval of Cohen's kappa between the judge's verdicts
and the labels is at least ``minKappa``, over at least ``minLabels`` labels. With ``gate``
on, only calibrated metrics decide runs and regressions (``compare.failOn``).
"""

from __future__ import annotations

from pydantic import Field

from n8n_deepeval_pipeline.config.model import ConfigModel


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
