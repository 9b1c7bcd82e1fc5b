"""One row model per stored table: the domain code and the storage both use these.

Every table carries the full ``workflow_hash``; the partition key is its version key
(the first 12 hex, ``workflow.hashing.version_key``). Fields holding lists or objects
are stored as JSON text by ``tables.frames``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.workflow.checks import CheckCategory, CheckStatus
from n8n_deepeval_pipeline.workflow.hashing import version_key

# A run without output was once stored as "no_output" too; one name is kept for it now, the
# one `compare` and the failure categories use, and rows stored before read back under it.
_RETIRED_ERROR_KINDS = {"no_output": "target_error"}


def _current_error_kind(kind: Any) -> Any:
    return _RETIRED_ERROR_KINDS.get(kind, kind) if isinstance(kind, str) else kind


class TableRow(BaseModel):
    """A row of one of the pipeline's tables; every table carries its version's hash."""

    model_config = ConfigDict(frozen=True)

    workflow_hash: str


class WorkflowSnapshot(TableRow):
    """The workflow version a partition stands for."""

    workflow_id: str | None
    name: str | None
    node_count: int
    source: str
    fetched_at: datetime
    canonical_json: str


class DatasetRow(TableRow):
    """A dataset row with its mapped DeepEval fields (snake_case) and the source row."""

    row_id: str
    position: int  # 1-based position in the source file, for error messages
    input: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    expected_tools: list[str] | None = None
    label: str | None = None
    turns: Any = None  # chat history before the run, in any n8n memory form
    chatbot_role: str | None = None
    expected_outcome: str | None = None
    scenario: str | None = None
    raw: dict[str, Any]


class ExpandedRun(TableRow):
    """A dataset row × run index, with the seed's ids."""

    run_id: str
    case_id: str
    run_index: int
    row_id: str
    run_name: str
    data_table_id: str | None = None


class AgentOutput(TableRow):
    """What the workflow produced for one run (or why it produced nothing)."""

    run_id: str
    actual_output: str | None = None
    intermediate_steps: list[Any] | None = None
    turns: list[Any] | None = None  # chat memory after the run
    label: str | None = None
    session_id: str | None = None
    latency_s: float | None = None
    error: str | None = None
    error_kind: Literal["target_error"] | None = None

    _error_kind = field_validator("error_kind", mode="before")(_current_error_kind)


class MetricScore(TableRow):
    """One metric on one run."""

    run_id: str
    case_id: str
    metric: str
    metric_slug: str
    score: float | None
    threshold: float
    success: bool
    direction: Direction
    reason: str | None
    error: str | None
    error_kind: str | None
    judge: str | None
    dry_run: bool
    judge_calls: int
    judge_retries: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost_usd: float | None
    latency_s: float
    # logprob_weighted (G-Eval's score weighted by the judge's log-probabilities) or
    # schema_fallback (the judge has none: DeepEval's integer score); None: not asked.
    score_path: str | None = None
    # A judge panel (``judges`` on the metric); None when one judge scored the row.
    panel: str | None = None  # how the judges' scores combined: majority or mean
    judge_agreement: float | None = None  # share of answering judges with the panel's verdict
    judge_scores: list[dict[str, Any]] | None = None  # each judge: score, success, error, cost

    _error_kind = field_validator("error_kind", mode="before")(_current_error_kind)


Row = TypeVar("Row", bound=TableRow)


def of_version(rows: Iterable[Row], version: str) -> list[Row]:
    """The rows of one workflow version, named by its hash or version key."""
    key = version_key(version)
    return [row for row in rows if version_key(row.workflow_hash) == key]


def full_hash(rows: Iterable[TableRow], version: str) -> str:
    """The full workflow hash of a version named by its key, as its rows store it."""
    key = version_key(version)
    return next(
        (row.workflow_hash for row in rows if version_key(row.workflow_hash) == key), version
    )


def scores_by_run(scores: Iterable[MetricScore]) -> dict[str, list[MetricScore]]:
    """Each run's score rows, by run id (a run without scores reads as an empty list)."""
    by_run: dict[str, list[MetricScore]] = defaultdict(list)
    for score in scores:
        by_run[score.run_id].append(score)
    return by_run


class RunAggregate(TableRow):
    """The overall result of one run under the benchmark's pass rule."""

    run_id: str
    case_id: str
    overall_score: float | None
    raw_mean_score: float | None
    overall_success: bool
    pass_rule: str
    metrics_passed: int
    metrics_counted: int
    metric_errors: int
    judge_calls: int
    tokens: int
    cost_usd: float | None
    metrics: list[dict[str, Any]]  # each counted metric's outcome


class ConsistencyStats(TableRow):
    """Consistency of one case's repeated runs."""

    case_id: str
    n_runs: int
    mean_score: float | None
    variance: float | None
    std: float | None
    cv: float | None
    min_score: float | None
    max_score: float | None
    pass_rate: float
    majority_success: bool
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    metric_stats: list[dict[str, Any]]
    label_distribution: dict[str, int] | None
    label_entropy: float | None
    label_normalized_entropy: float | None
    label_agreement: float | None
    majority_label: str | None
    consistency_basis: str
    overall_consistency: float | None


class CaseVerdict(TableRow):
    """One case of a version (the candidate) against its baseline version."""

    baseline_hash: str
    row_id: str
    baseline_passed: int
    baseline_runs: int
    candidate_passed: int
    candidate_runs: int
    delta: float | None  # candidate pass rate − baseline pass rate
    p_value_drop: float | None
    p_value_rise: float | None
    verdict: str


class WorkflowCheck(TableRow):
    """One deterministic check of a workflow version (``workflow.checks``)."""

    check_id: str
    category: CheckCategory
    status: CheckStatus
    message: str
    nodes: list[str]  # the nodes the check concerns
