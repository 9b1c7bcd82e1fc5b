"""The benchmark file: one n8n workflow, one dataset, one metric suite, in YAML.

Names follow the seed's nodes (``runsPerRow``, ``columnMapping``, ``passRule``, …).
Paths are relative to the benchmark file. Every error names the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from n8n_deepeval_pipeline.config_errors import BenchmarkConfigError, describe_validation_error
from n8n_deepeval_pipeline.config_model import ConfigModel
from n8n_deepeval_pipeline.judging.spec import JudgeProvider
from n8n_deepeval_pipeline.metrics.catalog import MetricSpec
from n8n_deepeval_pipeline.n8n_config import (
    DataTableSink,
    N8nWorkflowRef,
    WebhookTarget,
    WorkflowTarget,
)
from n8n_deepeval_pipeline.statistics.aggregate import PassRule
from n8n_deepeval_pipeline.statistics.consistency import Basis

# DeepEval-side fields a dataset column can be mapped to (the seed Trigger's names).
MappedField = Literal[
    "input",
    "expectedOutput",
    "context",
    "retrievalContext",
    "expectedTools",
    "label",
    "turns",
    "chatbotRole",
    "expectedOutcome",
    "scenario",
]
# What a recorded target can read from dataset columns.
RecordedColumn = Literal["output", "intermediateSteps", "label", "turns"]
# The seed Trigger's default columnMapping.
_SEED_MAPPING: dict[MappedField, str] = {"input": "input", "expectedOutput": "expectedOutput"}
_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")


class DatasetConfig(ConfigModel):
    """Where the rows come from (a file or an n8n Data Table) and how columns map to fields."""

    path: Path | None = None
    data_table: str | None = Field(
        default=None, description="An n8n Data Table's id or name (the seed Trigger's)."
    )
    format: Literal["csv", "jsonl", "parquet"] | None = Field(
        default=None, description="Default: from the file extension."
    )
    id_column: str = "id"
    column_mapping: dict[MappedField, str] = Field(default_factory=lambda: dict(_SEED_MAPPING))
    filters: dict[str, str | int | float | bool] = Field(default_factory=dict)
    limit_rows: bool | None = Field(
        default=None, description="Cap the rows at maxRows (default: on when maxRows is set)."
    )
    max_rows: int | None = Field(default=None, ge=1)

    @field_validator("filters", mode="before")
    @classmethod
    def _filters_as_pairs(cls, value: Any) -> Any:
        # Accept the seed's "column=value" strings as well as a mapping.
        if isinstance(value, list):
            pairs: dict[str, str] = {}
            for item in value:
                if not isinstance(item, str) or "=" not in item:
                    raise ValueError(f"filter {item!r} must be written as column=value")
                column, _, wanted = item.partition("=")
                pairs[column.strip()] = wanted.strip()
            return pairs
        return value

    @model_validator(mode="after")
    def _known_format(self) -> DatasetConfig:
        if (self.path is None) == (self.data_table is None):
            raise ValueError("a dataset needs exactly one of 'path' or 'dataTable'")
        if self.path is None:
            return self
        suffix_known = self.path.suffix.lower() in _FORMATS_BY_SUFFIX
        # A directory is refused by name when it is read, not as a file of unknown format.
        if self.format is None and not suffix_known and not self.path.is_dir():
            raise ValueError(
                f"cannot tell the format of {self.path.name!r}: "
                "use a .csv, .jsonl or .parquet file, or set 'format'"
            )
        return self

    @property
    def resolved_format(self) -> str:
        """The file format, from ``format`` or the file extension."""
        suffix = self.path.suffix.lower() if self.path else ""
        return self.format or _FORMATS_BY_SUFFIX.get(suffix, "n8n Data Table")

    @property
    def source(self) -> str:
        """Where the rows come from, for messages and metadata."""
        return str(self.path) if self.path else f"n8n Data Table {self.data_table!r}"

    @property
    def row_limit(self) -> int | None:
        """How many rows to keep after filtering, or None for all."""
        if self.limit_rows is False:
            return None
        if self.limit_rows and self.max_rows is None:
            return 100  # the seed Trigger's default maxRows
        return self.max_rows


_FORMATS_BY_SUFFIX = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


class RecordedTarget(ConfigModel):
    """Workflow outputs recorded earlier.

    Either a JSONL file keyed by row_id and run_index, or dataset columns whose values
    every run of a row shares.
    """

    type: Literal["recorded"] = "recorded"
    outputs: Path | None = None
    columns: dict[RecordedColumn, str] | None = None
    workflow_hash: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="The workflow version these outputs came from, unless each line says.",
    )
    ignore_unused_outputs: bool = Field(
        default=False,
        description="Leave out lines of this version that no run reads (a row not in the "
        "dataset after filters and maxRows, a run_index not below runsPerRow) instead of "
        "refusing them.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> RecordedTarget:
        if (self.outputs is None) == (self.columns is None):
            raise ValueError("a recorded target needs exactly one of 'outputs' or 'columns'")
        if self.columns is not None and "output" not in self.columns:
            raise ValueError("'columns' must name the dataset column that holds 'output'")
        return self


class AggregateConfig(ConfigModel):
    """How one run's metric results become the run's overall success."""

    pass_rule: PassRule = "allPass"
    metrics: list[str] | None = Field(
        default=None, description="Metric labels that count (default: all)."
    )


class ConsistencyConfig(ConfigModel):
    """How repeated runs of a case are compared."""

    group_by_field: Literal["caseId", "rowId"] = "caseId"
    label_field: str | None = Field(
        default=None,
        pattern=r"^(label|output|actualOutput|row\.[^.]+)$",
        description="label (recorded), output, or row.<dataset column>.",
    )
    consistency_basis: Basis = "cv"

    @model_validator(mode="after")
    def _label_for_label_bases(self) -> ConsistencyConfig:
        if self.consistency_basis != "cv" and not self.label_field:
            raise ValueError(f"consistencyBasis '{self.consistency_basis}' needs a labelField")
        return self


class CompareConfig(ConfigModel):
    """How a version is compared with its baseline (``n8n-deepeval compare``, the UI)."""

    baseline: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{7,64}$",
        description="The baseline version's hash or a prefix of it (default: the version "
        "registered before the candidate).",
    )
    fail_on: Literal["regression", "likely_regression"] = Field(
        default="regression",
        description="The verdict that fails `compare` and the no_regression check: "
        "regression (Fisher p < 0.05) or also likely_regression (p < 0.20).",
    )
    blocking: bool = Field(
        default=True,
        description="A failed no_regression check stops the assets after it (the report).",
    )


class ChecksConfig(ConfigModel):
    """Limits of the asset checks."""

    max_error_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Share of score rows without a judgement (judge or worker errors) "
        "above which the error_rate check fails.",
    )


class JudgeOverride(ConfigModel):
    """A judge for this benchmark instead of the judge resource's default."""

    provider: JudgeProvider
    model: str | None = None
    base_url: str | None = None
    api_version: str | None = None
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable that holds the key."
    )


class Benchmark(ConfigModel):
    """A whole benchmark file."""

    name: str = Field(description="Asset key prefix and DuckDB schema: lower_snake_case.")
    description: str = ""
    workflow: Path | N8nWorkflowRef = Field(
        description="An exported workflow file, or {id: …} for a workflow read from n8n."
    )
    dataset: DatasetConfig
    runs_per_row: int = Field(default=1, ge=1, le=100)
    run_name: str | None = None
    target: Annotated[RecordedTarget | WebhookTarget | WorkflowTarget, Field(discriminator="type")]
    sink: DataTableSink | None = None
    metrics: list[MetricSpec] = Field(min_length=1)
    aggregate: AggregateConfig = AggregateConfig()
    consistency: ConsistencyConfig = ConsistencyConfig()
    schedule: str | None = Field(
        default=None,
        description="Cron of the scheduled re-run of the current version; the schedule is "
        "on only when this is set (unset: off, at 0 2 * * * once turned on in the UI).",
    )
    run_first_version: bool = Field(
        default=False,
        description="Let the workflow-change sensor run the first version it sees (default: "
        "register it without a run, so starting the UI calls no judge).",
    )
    judge: JudgeOverride | None = None
    compare: CompareConfig = CompareConfig()
    checks: ChecksConfig = ChecksConfig()

    @model_validator(mode="before")
    @classmethod
    def _recorded_by_default(cls, data: Any) -> Any:
        target = data.get("target") if isinstance(data, dict) else None
        if isinstance(target, dict) and "type" not in target:
            data = {**data, "target": {**target, "type": "recorded"}}
        return data

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not _NAME_PATTERN.match(name):
            raise ValueError(
                "must be lower_snake_case (a-z, 0-9, _; starting with a letter), "
                "it becomes a DuckDB schema and an asset key prefix"
            )
        return name

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        if schedule is None:
            return None
        fields = schedule.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(field) for field in fields):
            raise ValueError("must be a 5-field cron expression such as '0 2 * * *'")
        return schedule

    @model_validator(mode="after")
    def _labels_unique_and_known(self) -> Benchmark:
        labels = [metric.result_label() for metric in self.metrics]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(
                f"metric labels must be unique, repeated: {', '.join(duplicates)} "
                "(set 'label' on one of them)"
            )
        unknown = sorted(set(self.aggregate.metrics or []) - set(labels))
        if unknown:
            raise ValueError(f"aggregate.metrics names unknown metrics {unknown}; known: {labels}")
        return self

    @model_validator(mode="after")
    def _executions_need_a_workflow_in_n8n(self) -> Benchmark:
        # A webhook's executions are found through its workflow in n8n.
        steps = isinstance(self.target, WebhookTarget) and self.target.steps_from_execution
        if steps and not isinstance(self.workflow, N8nWorkflowRef):
            raise ValueError(
                "target.stepsFromExecution reads the executions of the workflow in n8n: "
                "name it with workflow: {id: …}"
            )
        return self

    @property
    def metric_labels(self) -> list[str]:
        """Labels of the metrics, in file order."""
        return [metric.result_label() for metric in self.metrics]


def benchmark_json_schema() -> dict[str, Any]:
    """The JSON schema of a benchmark file, with the camelCase names used in YAML."""
    schema = Benchmark.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "n8n-deepeval benchmark"
    return schema


def _resolve_paths(raw: dict[str, Any], base: Path) -> None:
    """Make relative paths relative to the benchmark file, not the working directory."""

    def resolve(container: Any, key: str) -> None:
        if isinstance(container, dict) and isinstance(container.get(key), str):
            container[key] = str((base / container[key]).resolve())

    resolve(raw, "workflow")
    resolve(raw.get("dataset"), "path")
    resolve(raw.get("target"), "outputs")


def parse_benchmark(raw: Any, source: Path) -> Benchmark:
    """Validate an already-loaded YAML document; errors name ``source``."""
    if not isinstance(raw, Mapping):
        raise BenchmarkConfigError(source, ["(top level): must be a mapping of benchmark fields"])
    document = dict(raw)
    _resolve_paths(document, source.parent)
    try:
        return Benchmark.model_validate(document)
    except ValidationError as error:
        raise BenchmarkConfigError(source, describe_validation_error(error)) from None


def load_benchmark(path: Path | str) -> Benchmark:
    """Read and validate a benchmark YAML file."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise BenchmarkConfigError(source, [f"cannot read the file: {error.strerror}"]) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise BenchmarkConfigError(source, [f"not valid YAML: {error}"]) from None
    return parse_benchmark(raw, source)
