"""The calibration a step reads from the label store: what the gate keeps from deciding.

``run_aggregates`` leaves the metrics ``calibration.gate`` keeps from deciding out of the
pass rule; ``version_comparison`` and ``benchmark_report`` compare the versions without
them too. Each step reads the labels when it runs, so a step re-run after new labels
decides with them. Its metadata names every judge-backed metric's standing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.measurement import Calibration, measure
from n8n_deepeval_pipeline.calibration.status import MetricCalibration
from n8n_deepeval_pipeline.orchestration.metadata_figures import shown
from n8n_deepeval_pipeline.orchestration.resources.human_labels import HumanLabelsResource


def step_calibration(benchmark: Benchmark, labels: HumanLabelsResource) -> Calibration | None:
    """The benchmark's calibration now (None: it has no calibration section)."""
    if benchmark.calibration is None:
        return None
    return measure(benchmark, labels.store(benchmark).judged(), with_thresholds=False)


def not_deciding(calibration: Calibration | None) -> frozenset[str]:
    """The metrics the gate keeps from deciding runs and regressions (none without it)."""
    return frozenset(calibration.gated) if calibration is not None else frozenset()


def calibration_metadata(standings: Sequence[MetricCalibration], benchmark: str) -> dict[str, Any]:
    """Each judge-backed metric's standing and kappa, and the metrics that decide no run.

    While a metric is not calibrated, ``review_url`` links to the benchmark's review page,
    where people label its runs.
    """
    metadata: dict[str, Any] = {
        "uncalibrated_metrics": ", ".join(s.metric for s in standings if not s.calibrated)
        or "none",
        "metrics_deciding_no_run": ", ".join(s.metric for s in standings if s.gated) or "none",
    }
    for standing in standings:
        metadata[f"calibration/{standing.metric}"] = f"{standing.state}: {standing.why}"
        if standing.kappa is not None:
            metadata[f"calibration/{standing.metric}/kappa"] = dg.MetadataValue.float(
                standing.kappa
            )
    if any(not standing.calibrated for standing in standings):
        page = settings.workspace_url("benchmarks", benchmark, "review")
        metadata["review_url"] = dg.MetadataValue.url(page)
    return shown(metadata)
