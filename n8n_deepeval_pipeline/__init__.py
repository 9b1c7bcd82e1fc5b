"""Benchmark n8n AI workflows with DeepEval, orchestrated by Dagster.

The names most users need (none of them imports Dagster or DeepEval); the Dagster code
location is ``n8n_deepeval_pipeline.orchestration.definitions``.
"""

from n8n_deepeval_pipeline.benchmark.config import Benchmark, load_benchmark
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.evaluation import EvaluationItem, EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
    WorkflowSnapshot,
)
from n8n_deepeval_pipeline.worker.pool import WorkerPool
from n8n_deepeval_pipeline.workflow.hashing import canonical_workflow_json, workflow_hash

__all__ = [
    "CATALOG",
    "AgentOutput",
    "Benchmark",
    "BenchmarkConfigError",
    "ConsistencyStats",
    "DatasetRow",
    "EvaluationItem",
    "EvaluationResult",
    "EvaluationTask",
    "ExpandedRun",
    "JudgeSpec",
    "MetricEntry",
    "MetricScore",
    "RunAggregate",
    "WorkerPool",
    "WorkflowSnapshot",
    "canonical_workflow_json",
    "load_benchmark",
    "workflow_hash",
]
