"""Row models of the stored tables and their DataFrame form.

Column types come from the row model, not from pandas' guess, so a column that happens
to be empty in one partition still has the right type in DuckDB. JSON-valued columns
are stored as JSON text.
"""

from __future__ import annotations

import math
import types
from datetime import datetime
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import pandas as pd
from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.metrics.entry import Direction


class TableRow(BaseModel):
    """A row of one of the pipeline's tables; every table carries the partition."""

    model_config = ConfigDict(frozen=True)

    workflow_hash: str


class WorkflowSnapshotRow(TableRow):
    """The workflow version a partition stands for."""

    workflow_id: str | None
    name: str | None
    node_count: int
    source: str
    fetched_at: datetime
    canonical_json: str


class DatasetRowRecord(TableRow):
    """A dataset row with its mapped DeepEval fields."""

    row_id: str
    position: int
    input: str | None
    expected_output: str | None
    context: str | None
    retrieval_context: str | None
    expected_tools: str | None
    label: str | None
    turns: str | None
    chatbot_role: str | None
    expected_outcome: str | None
    scenario: str | None
    raw: str


class ExpandedRunRow(TableRow):
    """A row × run index, with the seed's ids."""

    run_id: str
    case_id: str
    run_index: int
    row_id: str
    run_name: str
    data_table_id: str | None


class AgentOutputRow(TableRow):
    """What the workflow produced for one run."""

    run_id: str
    actual_output: str | None
    intermediate_steps: str | None
    turns: str | None
    label: str | None
    session_id: str | None
    latency_s: float | None
    error: str | None


class MetricScoreRow(TableRow):
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


class RunAggregateRow(TableRow):
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
    metrics: str


class ConsistencyRow(TableRow):
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
    pass_at_k: str
    pass_hat_k: str
    metric_stats: str
    label_distribution: str | None
    label_entropy: float | None
    label_normalized_entropy: float | None
    label_agreement: float | None
    majority_label: str | None
    consistency_basis: str
    overall_consistency: float | None


_DTYPES: dict[Any, str] = {
    str: "string",
    int: "Int64",
    float: "Float64",
    bool: "boolean",
    datetime: "datetime64[us, UTC]",
}
Row = TypeVar("Row", bound=TableRow)


def _dtype(annotation: Any) -> str:
    if get_origin(annotation) is Literal:
        return "string"
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = [arg for arg in get_args(annotation) if arg is not type(None)]
    return _DTYPES[annotation]


def column_types(model: type[TableRow]) -> dict[str, str]:
    """Column name → pandas dtype, in the model's field order."""
    return {name: _dtype(field.annotation) for name, field in model.model_fields.items()}


def to_frame(model: type[Row], rows: list[Row]) -> pd.DataFrame:
    """A DataFrame with one column per field and dtypes from the model."""
    types_by_column = column_types(model)
    records = [row.model_dump() for row in rows]
    frame = pd.DataFrame.from_records(records, columns=list(types_by_column))
    return frame.astype(types_by_column)


def from_frame(model: type[Row], frame: pd.DataFrame) -> list[Row]:
    """Rows of a stored table, validated back into their model."""
    return [
        model.model_validate({str(k): None if _is_missing(v) else v for k, v in record.items()})
        for record in frame.to_dict(orient="records")
    ]


def _is_missing(value: Any) -> bool:
    """NaN, NA and NaT as DuckDB hands back NULLs in numeric and time columns."""
    return (
        value is None
        or value is pd.NA
        or value is pd.NaT
        or (isinstance(value, float) and math.isnan(value))
    )
