"""The benchmark file: one n8n workflow, one dataset, one metric suite, in YAML.

Names follow the seed's nodes (``runsPerRow``, ``columnMapping``, ``passRule``, …).
Paths are relative to the benchmark file. Every error names the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_snake

from n8n_deepeval_pipeline.benchmark.calibration import CalibrationConfig
from n8n_deepeval_pipeline.benchmark.n8n_target import (
    DataTableSink,
    N8nWorkflowRef,
    WebhookTarget,
    WorkflowTarget,
)
from n8n_deepeval_pipeline.benchmark.online import REFERENCE_FREE_FIELDS, OnlineConfig
from n8n_deepeval_pipeline.benchmark.optimize import OptimizeConfig
from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.benchmark.simulation import SimulationConfig
from n8n_deepeval_pipeline.config.cron import cron_problem
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError, describe_validation_error
from n8n_deepeval_pipeline.config.model import ConfigModel, FilePath, StatedDefaults
from n8n_deepeval_pipeline.config.schema_names import schema_name_problem
from n8n_deepeval_pipeline.config.yaml_loader import YamlProblem, load_yaml
from n8n_deepeval_pipeline.judging.spec import JUDGE_PROVIDERS, JudgeChoice, JudgeProvider
from n8n_deepeval_pipeline.metrics.catalog import MetricSpec, entry_for
from n8n_deepeval_pipeline.n8n_data.expressions import ExpressionError, Segments, parse_path
from n8n_deepeval_pipeline.redaction import treat_as_secrets
from n8n_deepeval_pipeline.statistics.aggregate import PassRule
from n8n_deepeval_pipeline.statistics.consistency import Basis
from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.workflow.variants import BASE

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
    "userDescription",
    "inputImages",
]
# What a recorded target can read from dataset columns.
RecordedColumn = Literal["output", "intermediateSteps", "label", "turns"]
# The seed Trigger's default columnMapping.
_SEED_MAPPING: dict[MappedField, str] = {"input": "input", "expectedOutput": "expectedOutput"}
_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


class DatasetConfig(ConfigModel):
    """Where the rows come from (a file or an n8n Data Table) and how columns map to fields."""

    path: FilePath | None = Field(
        default=None, description="A .csv, .jsonl or .parquet file, relative to this file."
    )
    data_table: str | None = Field(
        default=None, description="An n8n Data Table's id or name (the seed Trigger's)."
    )
    format: Literal["csv", "jsonl", "parquet"] | None = Field(
        default=None, description="Default: from the file extension."
    )
    id_column: str = Field(
        default="id", description="The column of each row's unique id (case and run ids use it)."
    )
    column_mapping: dict[MappedField, str] = Field(
        default_factory=lambda: dict(_SEED_MAPPING),
        description="DeepEval field → the column that holds it (default: input and "
        "expectedOutput from the columns of those names).",
    )
    filters: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="Keep only rows whose column equals the value ({split: test}, or "
        '["split=test"]); n8n filters a Data Table\'s rows itself.',
    )
    limit_rows: bool | None = Field(
        default=None,
        description="Cap the rows at maxRows (default: on when maxRows is set; 100 rows "
        "when on without maxRows, as the seed Trigger).",
    )
    max_rows: int | None = Field(
        default=None, ge=1, description="At most this many rows, the first ones kept."
    )

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

    type: Literal["recorded"] = Field(default="recorded", description="Outputs captured earlier.")
    outputs: FilePath | None = Field(
        default=None,
        description='A JSONL file of outputs, a line per run: {"row_id", "run_index", "output", '
        '"intermediateSteps", "turns", "label", "latencyS"} (and "workflow_hash").',
    )
    columns: dict[RecordedColumn, str] | None = Field(
        default=None,
        description="Dataset columns holding the output, intermediate steps, label or turns, "
        "shared by every run of a row (instead of outputs).",
    )
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


def _column_name(seed_name: str, what: str) -> Any:
    return Field(
        default=seed_name,
        min_length=1,
        description=f"Data Table column of {what} (the seed's option; needs the sink's table).",
    )


class AggregateConfig(ConfigModel):
    """How one run's metric results become the run's overall success (the seed's Aggregate).

    The ``…Column`` options name the columns of the n8n Data Table the run aggregates are
    written to (``sink.runAggregates``); DuckDB keeps its own column names.
    """

    pass_rule: PassRule = Field(
        default="allPass",
        description="allPass (every counted metric passed), anyPass (one did) or majorityPass "
        "(strictly more than half did).",
    )
    metrics: list[str] | Literal["allConnected"] | None = Field(
        default=None,
        description="Metric labels that count under the pass rule; allConnected (or unset): all.",
    )
    run_id_column: str = _column_name("runId", "the run id")
    score_column: str = _column_name("overallScore", "the overall score")
    success_column: str = _column_name("overallSuccess", "the overall success")
    metrics_column: str = _column_name("metrics", "the counted metrics' outcomes (JSON)")

    @field_validator("metrics")
    @classmethod
    def _all_connected_or_some(
        cls, metrics: list[str] | Literal["allConnected"] | None
    ) -> list[str] | None:
        if metrics == "allConnected":
            return None  # the seed's "every metric connected to the node"
        if metrics is not None and not metrics:
            raise ValueError("name at least one metric label, or allConnected for all")
        return metrics


# The seed's evalContext fields, as its Trigger writes them.
EvalContextField = Literal[
    "caseId",
    "rowId",
    "runId",
    "runIndex",
    "runName",
    "workflowHash",
    "sourceTableId",
    "isEvalRun",
]


class ConsistencyConfig(ConfigModel):
    """How repeated runs are grouped and compared (the seed's Consistency)."""

    group_by_field: EvalContextField = Field(
        default="caseId",
        description="evalContext field whose value groups runs (one consistency row each).",
    )
    label_field: str | None = Field(
        default=None,
        description="Path into the run's item for categorical labels: label, output, "
        "row.<column>, evalContext.<field>, a field of the answer (result.category), "
        "success, metrics[0].score …",
    )
    consistency_basis: Basis = Field(
        default="cv",
        description="What overallConsistency is made of: cv (1 − mean per-metric cv), entropy "
        "(1 − the labels' normalised entropy) or agreement (the labels' agreement); the "
        "last two need labelField.",
    )
    case_id_column: str = _column_name("caseId", "the group (case) id")
    mean_score_column: str = _column_name("meanScore", "the mean score")
    consistency_column: str = _column_name("overallConsistency", "the overall consistency")
    stats_column: str = _column_name("metricStats", "the per-metric statistics (JSON)")

    @field_validator("group_by_field", mode="before")
    @classmethod
    def _without_prefix(cls, field: Any) -> Any:
        return field.removeprefix("evalContext.") if isinstance(field, str) else field

    @field_validator("label_field")
    @classmethod
    def _a_path(cls, label_field: str | None) -> str | None:
        if label_field is not None:
            try:
                parse_path(label_field)
            except ExpressionError as error:
                raise ValueError(str(error)) from None
        return label_field

    @property
    def label_path(self) -> Segments | None:
        """``labelField`` as path segments."""
        return None if self.label_field is None else parse_path(self.label_field)

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
    fail_on: GateVerdict = Field(
        default="regression",
        description="The verdict that fails `compare` and the no_regression check: "
        "regression (Fisher p < 0.05) or also likely_regression (p < 0.20).",
    )
    blocking: bool = Field(
        default=False,
        description="A failed no_regression check fails the version_comparison step and so "
        "the run (the report is still written; nothing downstream of the comparison). By "
        "default a regression is a verdict, not a failure: the run succeeds, the check fails.",
    )


class ChecksConfig(ConfigModel):
    """Limits of the asset checks."""

    max_error_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Share of failed workflow calls, and of score rows without a judgement "
        "(judge or worker errors), above which the error_rate check fails and `run` exits 3.",
    )


class JudgeOverride(JudgeChoice):
    """A judge for this benchmark instead of the judge resource's default.

    Metrics may name their own (``judge``, or a panel in ``judges``); what they leave
    out comes from here.
    """

    provider: JudgeProvider = Field(description=f"One of {', '.join(JUDGE_PROVIDERS)}.")


class Benchmark(ConfigModel):
    """A whole benchmark file."""

    name: str = Field(description="Asset key prefix and DuckDB schema: lower_snake_case.")
    description: str = Field(default="", description="Free text for people reading the file.")
    workflow: FilePath | N8nWorkflowRef = Field(
        description="An exported workflow file, or {id: …} for a workflow read from n8n."
    )
    dataset: DatasetConfig | None = Field(
        default=None,
        description="Where the rows come from (required, unless a redTeam section is the "
        "whole benchmark: no dataset and no metrics).",
    )
    runs_per_row: int = Field(
        default=1, ge=1, le=100, description="Repeated runs of each row, for consistency."
    )
    run_name: str | None = Field(
        default=None, description="The runs' evalContext.runName (default: the benchmark's name)."
    )
    target: Annotated[
        RecordedTarget | WebhookTarget | WorkflowTarget,
        Field(
            discriminator="type",
            description="Where each run's output comes from: recorded, n8n_webhook or "
            "n8n_workflow.",
        ),
    ]
    sink: DataTableSink | None = Field(
        default=None, description="Where results are written back to n8n, besides DuckDB."
    )
    metrics: list[MetricSpec] = Field(
        default_factory=list,
        description="The metrics every run is scored on, by slug (at least one, unless a "
        "redTeam section is the whole benchmark).",
    )
    aggregate: AggregateConfig = Field(
        default=AggregateConfig(), description="How a run passes (the seed's Aggregate)."
    )
    consistency: ConsistencyConfig = Field(
        default=ConsistencyConfig(),
        description="How repeated runs are grouped and compared (the seed's Consistency).",
    )
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
    judge: JudgeOverride | None = Field(
        default=None, description="This benchmark's judge, instead of the default judge."
    )
    compare: CompareConfig = Field(
        default=CompareConfig(), description="How a version is compared with its baseline."
    )
    checks: ChecksConfig = Field(default=ChecksConfig(), description="Limits of the asset checks.")
    calibration: CalibrationConfig | None = Field(
        default=None,
        description="How much a judge-backed metric must agree with people's labels (Cohen's "
        "kappa) to be calibrated, and whether only calibrated metrics decide runs (off: unset; "
        "agreement is still reported once runs are labelled).",
    )
    online: OnlineConfig | None = Field(
        default=None,
        description="Score the workflow's production executions as they happen (off: unset).",
    )
    red_team: RedTeamConfig | None = Field(
        default=None,
        description="Attack the workflow's agent with DeepTeam (off: unset); needs an "
        "n8n_workflow target (its service nodes mocked) or a webhook that actsOnTheWorld.",
    )
    simulation: SimulationConfig | None = Field(
        default=None,
        description="Play each run of a conversational golden (scenario, expectedOutcome, "
        "userDescription) as a conversation with a simulated user (off: unset).",
    )
    optimize: OptimizeConfig | None = Field(
        default=None,
        description="How `n8n-deepeval optimize` rewrites a prompt of the workflow with "
        "DeepEval's PromptOptimizer (needs an n8n_workflow target; unset: its defaults).",
    )

    @model_validator(mode="before")
    @classmethod
    def _recorded_by_default(cls, data: Any) -> Any:
        target = data.get("target") if isinstance(data, dict) else None
        if isinstance(target, dict) and "type" not in target:
            data = {**data, "target": {**target, "type": "recorded"}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _golden_columns_by_default(cls, data: Any) -> Any:
        # A golden has no input: the seed's input/expectedOutput mapping would demand
        # columns it does not have. Its own columns are read by name (tables.dataset_file).
        if not isinstance(data, dict) or data.get("simulation") is None:
            return data
        dataset = data.get("dataset")
        if not isinstance(dataset, dict):
            return data
        if {"columnMapping", "column_mapping"} & dataset.keys():
            return data
        return {**data, "dataset": {**dataset, "columnMapping": {}}}

    @model_validator(mode="before")
    @classmethod
    def _seed_column_names_into_the_sink(cls, data: Any) -> Any:
        # aggregate.scoreColumn etc. rename the sink's columns, as sink.….columns does.
        if not isinstance(data, dict):
            return data
        for (section, table), options in _SEED_COLUMNS.items():
            config = data.get(section)
            if not isinstance(config, dict):
                continue
            renames = {
                column: config[_key(config, option)]
                for option, column in options.items()
                if isinstance(config.get(_key(config, option)), str)
                and config[_key(config, option)] != column
            }
            if renames:
                data = _renamed_in_sink(data, section, table, renames)
        return data

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not _NAME_PATTERN.match(name):
            raise ValueError(
                "must be lower_snake_case (a-z, 0-9, _; starting with a letter), "
                "it becomes a DuckDB schema and an asset key prefix"
            )
        problem = schema_name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        return name

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        problem = None if schedule is None else cron_problem(schedule)
        if problem is not None:
            raise ValueError(problem)
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
    def _runs_or_a_red_team_alone(self) -> Benchmark:
        # A red team attacks with its own messages: a benchmark may be only that.
        if self.dataset is not None and not self.metrics:
            raise ValueError(
                "metrics: give at least one metric to score the dataset's runs (a redTeam "
                "section alone needs neither dataset nor metrics)"
            )
        if self.dataset is not None:
            return self
        if self.red_team is None:
            raise ValueError(
                "dataset: Field required (only a benchmark that is a redTeam section alone "
                "has none)"
            )
        alone = {"metrics": self.metrics, "simulation": self.simulation, "sink": self.sink,
                 "online": self.online}  # fmt: skip
        given = [name for name, value in alone.items() if value]
        if given:
            raise ValueError(
                f"{given[0]}: a benchmark without a dataset is a redTeam section alone; "
                f"{given[0]} needs the dataset's runs: give a dataset, or remove {given[0]}"
            )
        return self

    @property
    def red_team_only(self) -> bool:
        """Whether the benchmark is a red team alone: no dataset, no metrics, no runs."""
        return self.dataset is None

    @property
    def runs_dataset(self) -> DatasetConfig:
        """The dataset whose rows become runs (only a red team alone has none, and no runs)."""
        if self.dataset is None:
            raise ValueError(f"{self.name}: a red team alone has no dataset and no runs")
        return self.dataset

    @model_validator(mode="after")
    def _group_field_present(self) -> Benchmark:
        from_file = self.dataset is None or self.dataset.data_table is None
        if self.consistency.group_by_field == "sourceTableId" and from_file:
            raise ValueError(
                "consistency.groupByField 'sourceTableId': runs of a dataset file have no "
                "evalContext.sourceTableId (it is the dataset's n8n Data Table)"
            )
        return self

    @model_validator(mode="after")
    def _judges_only_where_judged(self) -> Benchmark:
        for metric in self.metrics:
            entry = entry_for(metric)
            names_judge = metric.judge_choices() != [None]
            if names_judge and not (entry.needs_judge or entry.accepts_judge):
                raise ValueError(
                    f"metric {metric.result_label()!r} ({entry.name}) calls no judge: "
                    "remove its 'judge', 'model' or 'judges'"
                )
        return self

    @model_validator(mode="after")
    def _head_to_head_between_variants(self) -> Benchmark:
        variants = self.variants
        for metric in self.metrics:
            if not entry_for(metric).head_to_head:
                continue
            label, against = metric.result_label(), getattr(metric, "against", BASE)
            if not variants:
                raise ValueError(
                    f"metric {label!r} judges variants head to head: give the n8n_workflow "
                    "target variants"
                )
            if against != BASE and against not in variants:
                known = ", ".join([BASE, *variants])
                raise ValueError(f"metric {label!r}: against {against!r} is not one of {known}")
            if label in (self.aggregate.metrics or []):
                raise ValueError(
                    f"aggregate.metrics: {label!r} judges one variant against another and "
                    "decides no run"
                )
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

    @model_validator(mode="after")
    def _simulation_needs_a_live_target(self) -> Benchmark:
        if self.simulation is None:
            return self
        if isinstance(self.target, RecordedTarget):
            raise ValueError(
                "simulation: a recorded target replays outputs captured earlier, so a "
                "simulated user has no workflow to talk to: use target type n8n_workflow or "
                "n8n_webhook, or remove the simulation section"
            )
        if self.target.messages_column is not None:
            raise ValueError(
                "simulation: target.messagesColumn scripts the user's messages, which the "
                "simulated user writes: remove one of them"
            )
        return self

    @model_validator(mode="after")
    def _no_judge_key_in_templates(self) -> Benchmark:
        listed = set(getattr(self.target, "env", ()))
        simulator = self.simulation.judge if self.simulation else None
        choices = [
            self.judge,
            simulator,
            *(c for metric in self.metrics for c in metric.judge_choices()),
        ]
        keys = {choice.api_key_env for choice in choices if choice and choice.api_key_env}
        shared = sorted(listed & keys)
        if shared:
            raise ValueError(
                f"target.env lists {shared[0]}, a judge's key (apiKeyEnv): templates never see it"
            )
        return self

    @model_validator(mode="after")
    def _online_metrics_reference_free(self) -> Benchmark:
        if self.online is None:
            return self
        if not isinstance(self.workflow, N8nWorkflowRef):
            raise ValueError(
                "online reads the workflow's executions in n8n: name it with workflow: {id: …}"
            )
        by_label = {metric.result_label(): metric for metric in self.metrics}
        for label in self.online.metrics:
            if label not in by_label:
                raise ValueError(
                    f"online.metrics names unknown metric {label!r}; known: {list(by_label)}"
                )
            metric = by_label[label]
            needs = set(entry_for(metric).fields_needed(metric)) - REFERENCE_FREE_FIELDS
            if needs:
                raise ValueError(
                    f"online.metrics: {label!r} needs {', '.join(sorted(needs))}, which "
                    "production executions do not have (choose reference-free metrics)"
                )
        return self

    @model_validator(mode="after")
    def _red_team_attacks_a_workflow(self) -> Benchmark:
        if self.red_team is None:
            return self
        if isinstance(self.target, RecordedTarget):
            raise ValueError(
                "redTeam needs a workflow to attack: a recorded target only replays outputs "
                "(use target type n8n_workflow)"
            )
        if isinstance(self.target, WebhookTarget) and not self.red_team.acts_on_the_world:
            raise ValueError(
                "redTeam on an n8n_webhook target runs every tool an attack makes the agent "
                "call, for real: use an n8n_workflow target (its service nodes are mocked), "
                "or set redTeam.actsOnTheWorld: true"
            )
        return self

    @model_validator(mode="after")
    def _optimize_what_can_be_varied(self) -> Benchmark:
        if self.optimize is None:
            return self
        if not isinstance(self.target, WorkflowTarget):
            raise ValueError(
                "optimize: candidates are set on the workflow's harness copy: use target "
                "type n8n_workflow"
            )
        if self.simulation is not None:
            raise ValueError(
                "optimize: a candidate is scored on one answer per row, not on a simulated "
                "conversation: remove the simulation section to optimise"
            )
        known = self.counted_labels + [
            label for label in self.metric_labels if label not in self.head_to_head
        ]
        for label in self.optimize.metrics or []:
            if label in self.head_to_head:
                raise ValueError(
                    f"optimize.metrics: {label!r} judges variants head to head, not a candidate"
                )
            if label not in known:
                raise ValueError(f"optimize.metrics names unknown metric {label!r}; known: "
                                 f"{list(dict.fromkeys(known))}")  # fmt: skip
        return self

    @property
    def optimized_labels(self) -> list[str]:
        """The metrics a candidate prompt is scored on: optimize.metrics, else the deciding ones."""
        chosen = self.optimize.metrics if self.optimize is not None else None
        return list(chosen) if chosen else self.counted_labels

    def for_trial(self) -> Benchmark:
        """The benchmark for a trial of a few of its rows.

        A trial writes nothing to n8n (no sink), the recordings of the rows it leaves out
        are not an error, and it runs no red team (whose attacks are not rows).
        """
        target = self.target
        if isinstance(target, RecordedTarget):
            target = target.model_copy(update={"ignore_unused_outputs": True})
        return self.model_copy(update={"sink": None, "target": target, "red_team": None})

    @property
    def simulator_judge(self) -> JudgeChoice | None:
        """The judge that plays the simulated user: the simulation's, over the benchmark's."""
        own = self.simulation.judge if self.simulation else None
        return own.over(self.judge) if own is not None else self.judge

    @property
    def secret_variables(self) -> list[str]:
        """The environment variables whose values this benchmark sends somewhere.

        What its templates read (``target.env``, ``urlEnv``) and its judges' keys and
        endpoints: a server may echo any of them back, so their values are secrets.
        """
        target = self.target
        names = [*getattr(target, "env", ()), getattr(target, "url_env", None)]
        simulator = self.simulation.judge if self.simulation else None
        choices = [self.judge, simulator, *(c for m in self.metrics for c in m.judge_choices())]
        for choice in filter(None, choices):
            names += [choice.api_key_env, choice.aws_access_key_id_env]
            names += [choice.aws_session_token_env, choice.base_url_env]
        return [name for name in dict.fromkeys(names) if name]

    @property
    def metric_labels(self) -> list[str]:
        """Labels of the metrics, in file order."""
        return [metric.result_label() for metric in self.metrics]

    @property
    def counted_labels(self) -> list[str]:
        """The metrics that decide a run under the pass rule (aggregate.metrics, default all).

        A head-to-head metric never does: it says how two versions compare.
        """
        if self.aggregate.metrics is not None:
            return list(self.aggregate.metrics)
        return [
            metric.result_label() for metric in self.metrics if not entry_for(metric).head_to_head
        ]

    @property
    def head_to_head(self) -> dict[str, str]:
        """Each head-to-head metric's label → the version it is against (base or a variant)."""
        return {
            metric.result_label(): getattr(metric, "against", BASE)
            for metric in self.metrics
            if entry_for(metric).head_to_head
        }

    @property
    def variants(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The target's variants in file order (none unless an n8n_workflow target has some)."""
        return dict(self.target.variants) if isinstance(self.target, WorkflowTarget) else {}


# The seed's column options of Aggregate and Consistency, each with the sink column it
# renames (the seed's default name), per (section, sink table).
_SEED_COLUMNS: dict[tuple[str, str], dict[str, str]] = {
    ("aggregate", "runAggregates"): {
        "runIdColumn": "runId",
        "scoreColumn": "overallScore",
        "successColumn": "overallSuccess",
        "metricsColumn": "metrics",
    },
    ("consistency", "consistencyStats"): {
        "caseIdColumn": "caseId",
        "meanScoreColumn": "meanScore",
        "consistencyColumn": "overallConsistency",
        "statsColumn": "metricStats",
    },
}


def _key(mapping: Mapping[str, Any], camel: str) -> str:
    """The key ``mapping`` uses for a field: its camelCase name, or its snake_case one."""
    snake = to_snake(camel)
    return snake if snake in mapping and camel not in mapping else camel


def _renamed_in_sink(
    data: dict[str, Any], section: str, table: str, renames: dict[str, str]
) -> dict[str, Any]:
    """``data`` with ``renames`` added to the sink table's ``columns``."""
    options = {column: option for option, column in _SEED_COLUMNS[(section, table)].items()}
    named = ", ".join(f"{section}.{options[column]}" for column in renames)
    sink = data.get("sink")
    output = sink.get(_key(sink, table)) if isinstance(sink, dict) else None
    if not isinstance(sink, dict) or not isinstance(output, dict):
        raise ValueError(
            f"{named} name columns of the n8n Data Table in sink.{table}, which is not set"
        )
    columns = output.get("columns") or {}
    if not isinstance(columns, dict):
        return data  # validation names the field
    for column, name in renames.items():
        if columns.get(column, name) != name:
            raise ValueError(
                f"{section}.{options[column]} ({name!r}) and sink.{table}.columns.{column} "
                f"({columns[column]!r}) rename the same column: keep one"
            )
    output = {**output, "columns": {**columns, **renames}}
    return {**data, "sink": {**sink, _key(sink, table): output}}


def benchmark_json_schema() -> dict[str, Any]:
    """The JSON schema of a benchmark file, with the camelCase names used in YAML."""
    schema = Benchmark.model_json_schema(by_alias=True, schema_generator=StatedDefaults)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "n8n-deepeval benchmark"
    return schema


def resolve_paths(raw: dict[str, Any], base: Path) -> None:
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
    resolve_paths(document, source.parent)
    try:
        benchmark = Benchmark.model_validate(document)
    except ValidationError as error:
        raise BenchmarkConfigError(source, describe_validation_error(error)) from None
    treat_as_secrets(benchmark.secret_variables)  # whatever this process prints or stores
    return benchmark


def load_benchmark(path: Path | str) -> Benchmark:
    """Read and validate a benchmark YAML file."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise BenchmarkConfigError(source, [f"cannot read the file: {error.strerror}"]) from None
    try:
        raw = load_yaml(text)
    except YamlProblem as error:
        raise BenchmarkConfigError(source, [f"not valid YAML: {error}"]) from None
    return parse_benchmark(raw, source)
