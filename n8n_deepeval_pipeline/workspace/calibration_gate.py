"""What ``calibration.gate`` keeps from deciding now, read from the store as ``compare`` reads it.

``run`` and ``compare`` decide every version (its baseline too) without the metrics people
have not calibrated *now*: labels given after a version was aggregated, or a gate switched
on since, change its verdict. The pages decide with the same metrics, from the labels in
the store they read, measured by the same calibration functions; without the gate (the
common case) no label is read.
"""

from __future__ import annotations

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.calibration.judged_reads import judged_labels
from n8n_deepeval_pipeline.calibration.status import gated_metrics
from n8n_deepeval_pipeline.workspace.store import Reader, stored_columns


def not_deciding(reader: Reader, benchmark: Benchmark | None) -> frozenset[str]:
    """The metrics that decide no run or regression now (none: no gate, or no file loaded)."""
    if benchmark is None:
        return frozenset()
    return gated_metrics(benchmark, lambda: labels_beside_scores(reader, benchmark))


def labels_beside_scores(reader: Reader, benchmark: Benchmark) -> list[JudgedLabel]:
    """The benchmark's labels with their runs' stored results, as the label store reads them."""
    return judged_labels(
        benchmark,
        lambda name: stored_columns(reader, benchmark.name, name),
        # Each value is selected under a name of its own: a record's values are its row.
        lambda sql: [tuple(record.values()) for record in reader.records(sql)],
    )
