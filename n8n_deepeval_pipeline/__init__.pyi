from .benchmark.config import Benchmark as Benchmark
from .benchmark.config import load_benchmark as load_benchmark
from .config.errors import BenchmarkConfigError as BenchmarkConfigError
from .evaluation import EvaluationItem as EvaluationItem
from .evaluation import EvaluationResult as EvaluationResult
from .evaluation import EvaluationTask as EvaluationTask
from .judging.spec import JudgeSpec as JudgeSpec
from .metrics.catalog import CATALOG as CATALOG
from .metrics.entry import MetricEntry as MetricEntry
from .tables.rows import AgentOutput as AgentOutput
from .tables.rows import ConsistencyStats as ConsistencyStats
from .tables.rows import DatasetRow as DatasetRow
from .tables.rows import ExpandedRun as ExpandedRun
from .tables.rows import MetricScore as MetricScore
from .tables.rows import RunAggregate as RunAggregate
from .tables.rows import WorkflowSnapshot as WorkflowSnapshot
from .worker.pool import WorkerPool as WorkerPool
from .workflow.hashing import canonical_workflow_json as canonical_workflow_json
from .workflow.hashing import workflow_hash as workflow_hash

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
