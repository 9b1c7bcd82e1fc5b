"""Benchmark n8n AI workflows with DeepEval, orchestrated by Dagster.

The names most users need; the Dagster code location is
``n8n_deepeval_pipeline.definitions``.
"""

from n8n_deepeval_pipeline.benchmark_config import Benchmark, load_benchmark
from n8n_deepeval_pipeline.config_errors import BenchmarkConfigError
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.workflow_hash import canonical_workflow_json, workflow_hash

__all__ = [
    "CATALOG",
    "Benchmark",
    "BenchmarkConfigError",
    "MetricEntry",
    "canonical_workflow_json",
    "load_benchmark",
    "workflow_hash",
]
