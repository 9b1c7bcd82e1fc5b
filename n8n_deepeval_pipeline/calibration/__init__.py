"""The judge checked against people: labels, agreement, fitted thresholds, the review queue.

People label runs (the review queue, a labels file, an n8n Data Table); each label is set
beside the judge's verdict on the same run and metric; agreement is measured beyond chance
(Cohen's kappa with a bootstrap interval, Krippendorff's alpha), thresholds are fitted to
the labels, and with ``calibration.gate`` only the metrics that agree with people decide
runs. Nothing here knows about Dagster: the results store's resources keep the labels.
"""

from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.calibration.label_store import LabelStore
from n8n_deepeval_pipeline.calibration.measurement import Calibration, measure
from n8n_deepeval_pipeline.calibration.review_queue import MetricLabel, ReviewQueue
from n8n_deepeval_pipeline.calibration.status import MetricCalibration, gated_metrics

__all__ = [
    "Calibration",
    "JudgedLabel",
    "LabelStore",
    "MetricCalibration",
    "MetricLabel",
    "ReviewQueue",
    "gated_metrics",
    "measure",
]
