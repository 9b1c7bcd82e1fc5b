"""Check a benchmark file and everything it points to, without running anything.

A workflow or a dataset that lives in n8n is read through the API (``n8n``); nothing is
ever called on a webhook or a judge.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from n8n_deepeval_pipeline.benchmark.config import (
    Benchmark,
    DatasetConfig,
    RecordedTarget,
    load_benchmark,
)
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef, WebhookTarget, WorkflowTarget
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError, pointed_to_by
from n8n_deepeval_pipeline.environment_variables import VARIABLES
from n8n_deepeval_pipeline.judging.providers import missing_sdk
from n8n_deepeval_pipeline.judging.spec import (
    JUDGE_PROVIDERS,
    JudgeChoice,
    JudgeConfigError,
    choose_judge,
)
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nClient, N8nUnreachable
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    harness_body,
    harness_problems,
    unmocked_services,
)
from n8n_deepeval_pipeline.n8n_api.sources import fetch_records, fetch_workflow
from n8n_deepeval_pipeline.n8n_api.webhook import request_problems, unset_env
from n8n_deepeval_pipeline.red_team.target import attack_problems
from n8n_deepeval_pipeline.redaction import (
    MIN_SECRET_LENGTH,
    is_secret_variable,
    too_short_to_redact,
)
from n8n_deepeval_pipeline.statistics.held_out_draw import MIN_TRAINING_ROWS
from n8n_deepeval_pipeline.statistics.version_comparison import gate_reach
from n8n_deepeval_pipeline.synthesis.judges import default_judge
from n8n_deepeval_pipeline.tables.dataset_file import load_dataset_rows
from n8n_deepeval_pipeline.tables.recorded_outputs import read_recorded_lines, refuse_unused_lines
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.workflow.anatomy import anatomy
from n8n_deepeval_pipeline.workflow.file import read_workflow
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.prompt_parameter import PromptParameterError, prompt_parameter


class CheckReport(BaseModel):
    """What a valid benchmark will run."""

    benchmark: str
    workflow_hash: str
    rows: int
    runs: int
    metrics: list[str]
    row_ids: list[str]
    warnings: list[str] = []
    """What is valid but will not do what the file seems to ask."""


class CannotRunHere(BenchmarkConfigError):
    """A valid benchmark that this environment cannot run (n8n not configured for a harness)."""

    def __init__(self, source: Path, problems: list[str]) -> None:
        super().__init__(source, problems)
        listing = "\n".join(f"  - {problem}" for problem in problems)
        self.args = (f"{source}: cannot run here\n{listing}",)


_HARNESS_NEEDS_N8N = (
    "target: n8n_workflow runs a harness copy in n8n: set N8N_API_URL and N8N_API_KEY "
    "(Settings → n8n API in n8n) to run it"
)


def check_benchmark(
    path: Path, n8n: N8nClient | None = None, for_run: bool = False
) -> tuple[Benchmark, CheckReport]:
    """Validate the file, the workflow, the dataset and the recorded outputs.

    ``for_run``: what only a run needs is an error, not a warning (n8n for a harness copy).
    """
    benchmark = load_benchmark(path)
    needs_n8n = n8n is None and isinstance(benchmark.target, WorkflowTarget)
    if for_run and needs_n8n:
        raise CannotRunHere(path, [_HARNESS_NEEDS_N8N])
    _check_judges(path, benchmark)
    try:
        workflow = _workflow(benchmark, path, n8n)
        digest = workflow_hash(workflow)
        records = _records(benchmark, path, n8n)
    except N8nUnreachable:
        raise  # the outside world failing, not the file: the command says so apart
    except N8nApiError as error:
        raise BenchmarkConfigError(path, [f"n8n: {error}"]) from None
    with pointed_to_by(path):
        rows = _rows(path, benchmark, digest, records)
        if isinstance(benchmark.target, RecordedTarget):
            _check_recordings(path, benchmark, benchmark.target, rows, digest)
    _check_online_sessions(path, benchmark, workflow)
    warnings = [f"run refuses it here: {_HARNESS_NEEDS_N8N}"] if needs_n8n else []
    warnings += _gate_warnings(benchmark)
    if isinstance(benchmark.target, WorkflowTarget):
        warnings += _check_harness(path, benchmark.target, workflow, rows)
    warnings += _check_red_team(path, benchmark, workflow)
    _check_optimize(path, benchmark, workflow, len(rows))
    if rows:  # a red team alone sends its own messages, not the dataset's requests
        warnings += _check_requests(path, benchmark, workflow, rows[0])
    warnings += _short_secrets(benchmark)
    report = CheckReport(
        benchmark=benchmark.name,
        workflow_hash=digest,
        rows=len(rows),
        runs=len(rows) * benchmark.runs_per_row,
        metrics=benchmark.metric_labels,
        row_ids=[row.row_id for row in rows],
        warnings=warnings,
    )
    return benchmark, report


def _rows(
    path: Path, benchmark: Benchmark, digest: str, records: list[dict[str, Any]] | None
) -> list[DatasetRow]:
    """The dataset's rows (none for a red team alone).

    A dataset of none is refused here: a run of no rows fails far from its cause.
    """
    if benchmark.dataset is None:
        return []
    conversational = benchmark.simulation is not None
    rows = load_dataset_rows(benchmark.dataset, digest, records, conversational)
    if not rows:
        raise BenchmarkConfigError(path, [_no_rows(benchmark.dataset)])
    return rows


def _judges_used(benchmark: Benchmark) -> list[tuple[str, JudgeChoice | None, bool]]:
    """Each judge a run builds: where it is named, the choice (layered), and whether it is asked.

    Every metric's judge is built when the run plans its scores; a metric that needs a
    judge asks it, and so do the simulated user, the red team and judged mocks. A judge a
    metric does not name itself is the benchmark's ``judge`` or the default judge.
    """
    inherited = "judge" if benchmark.judge is not None else "N8N_DEEPEVAL_JUDGE_*"
    used: list[tuple[str, JudgeChoice | None, bool]] = []
    for index, metric in enumerate(benchmark.metrics):
        asked = entry_for(metric).needs_judge
        for choice in metric.judge_choices():
            if choice is None:
                used.append((inherited, benchmark.judge, asked))
            else:
                where = f"metrics[{index}] ({metric.result_label()})"
                used.append((where, choice.over(benchmark.judge), asked))
    if benchmark.simulation is not None:
        where = "simulation.judge" if benchmark.simulation.judge is not None else inherited
        used.append((where, benchmark.simulator_judge, True))
    mocks = getattr(benchmark.target, "mocks", None)
    judged_mocks = mocks is not None and any(mock.judge for mock in mocks.nodes.values())
    if benchmark.red_team is not None or judged_mocks:
        used.append((inherited, benchmark.judge, True))
    return used


def _check_judges(path: Path, benchmark: Benchmark) -> None:
    """Every judge the run will build as it builds it, and the SDK of every judge it asks.

    The default judge comes from ``N8N_DEEPEVAL_JUDGE_*``, as the run's does; a problem is
    said once, with every field it concerns.
    """
    default = default_judge(os.environ)
    if default["provider"] not in JUDGE_PROVIDERS:
        raise BenchmarkConfigError(
            path,
            [
                f"N8N_DEEPEVAL_JUDGE_PROVIDER={default['provider']!r} names no judge provider: "
                f"one of {', '.join(JUDGE_PROVIDERS)}"
            ],
        )
    found: dict[str, list[str]] = {}
    for where, choice, asked in _judges_used(benchmark):
        try:
            spec = choose_judge(default, choice, os.environ)
        except JudgeConfigError as error:
            found.setdefault(str(error), []).append(where)
            continue
        missing = missing_sdk(spec.provider) if asked else None
        if missing is not None:
            found.setdefault(missing, []).append(where)
    if found:
        raise BenchmarkConfigError(
            path,
            [f"{', '.join(dict.fromkeys(wheres))}: {problem}" for problem, wheres in found.items()],
        )


def _no_rows(dataset: DatasetConfig) -> str:
    """Why a dataset gives no row: its source, and the filters that matched nothing."""
    source = dataset.path if dataset.path is not None else f"Data Table {dataset.data_table!r}"
    if not dataset.filters:
        return f"dataset: {source} has no rows: nothing would run"
    filters = ", ".join(f"{column}={value}" for column, value in dataset.filters.items())
    return f"dataset: no row of {source} matches dataset.filters ({filters}): nothing would run"


def _check_harness(
    path: Path, target: WorkflowTarget, workflow: dict[str, Any], rows: list[DatasetRow]
) -> list[str]:
    """The start/end nodes and the mocks; what will act on a real service, as warnings."""
    problems = harness_problems(target, workflow)
    for name, mock in target.mocks.nodes.items():
        lacking = next((row for row in rows if mock.column and mock.column not in row.raw), None)
        if lacking is not None:
            problems.append(
                f'mock "{name}": column {mock.column!r} is missing from row {lacking.row_id!r}'
            )
    if problems:
        raise BenchmarkConfigError(path, [f"target: {problem}" for problem in problems])
    return [
        f"acts on a real service: {node} (mock it in target.mocks)"
        for node in unmocked_services(target, workflow)
    ]


def _check_red_team(path: Path, benchmark: Benchmark, workflow: dict[str, Any]) -> list[str]:
    """A red team that would act on the world: refused, or said when the file accepts it."""
    if benchmark.red_team is None:
        return []
    if isinstance(benchmark.target, WorkflowTarget):
        problems = attack_problems(benchmark.target, workflow)
        if problems:
            raise BenchmarkConfigError(path, [f"redTeam: {problem}" for problem in problems])
        return []
    assert isinstance(benchmark.target, WebhookTarget)  # the model refuses a recorded one
    return [
        "redTeam.actsOnTheWorld: the red team attacks the live webhook, so every tool an "
        "attack makes the agent call really runs (a refund, an e-mail): an n8n_workflow "
        "target would mock them"
    ]


def _check_optimize(path: Path, benchmark: Benchmark, workflow: dict[str, Any], rows: int) -> None:
    """The optimize section's node and parameter hold a prompt; the rows can be split."""
    config = benchmark.optimize
    if config is None:
        return
    try:
        prompt_parameter(workflow, config.node, config.parameter)
    except PromptParameterError as error:
        raise BenchmarkConfigError(path, [f"optimize.{error.field}: {error}"]) from None
    if rows < MIN_TRAINING_ROWS + 1:
        raise BenchmarkConfigError(
            path,
            [f"optimize: the dataset has {rows} rows; optimising needs at least "
             f"{MIN_TRAINING_ROWS + 1} (two to search on, one held out)"],
        )  # fmt: skip


def _check_online_sessions(path: Path, benchmark: Benchmark, workflow: dict[str, Any]) -> None:
    """Conversational online metrics need the session each execution belongs to."""
    if benchmark.online is None:
        return
    conversational = [
        metric.result_label()
        for metric in benchmark.metrics
        if metric.result_label() in benchmark.online.metrics and entry_for(metric).needs_turns
    ]
    shape = anatomy(workflow)
    if conversational and shape.session is None:
        raise BenchmarkConfigError(
            path,
            [
                f"online.metrics: {', '.join(conversational)} score chat sessions, but the "
                f"workflow names none: {shape.no_session}; key the memory by a field of the "
                "request (Session ID: Define below, {{ $json.body.sessionId }}) or score only "
                "per execution"
            ],
        )


# A harness copy's webhook is made by the run; its templates are checked without it.
_HARNESS_URL = "http://harness.invalid/webhook/validate"


def _check_requests(
    path: Path, benchmark: Benchmark, workflow: dict[str, Any], first: DatasetRow
) -> list[str]:
    """Every request template rendered for the first row: one that fails, fails every call.

    The variables the templates read and this environment lacks are warnings: a run
    elsewhere may have them.
    """
    target = benchmark.target
    if isinstance(target, WorkflowTarget):
        webhook, body_field = (
            target.as_webhook(_HARNESS_URL, harness_body(target, workflow)),
            "input",
        )
    elif isinstance(target, WebhookTarget):
        webhook, body_field = target, "body"
    else:
        return []
    problems = request_problems(webhook, first, os.environ, body_field)
    if problems:
        raise BenchmarkConfigError(path, problems)
    return unset_env(webhook, os.environ)


# The project's own secret variables (the judge's keys, n8n's key).
_OWN_SECRETS = tuple(v.name for v in VARIABLES if is_secret_variable(v.name))


def _short_secrets(benchmark: Benchmark) -> list[str]:
    """The secrets too short to take out of output by value: left in, and said so."""
    names = [*_OWN_SECRETS, *benchmark.secret_variables]
    return [
        f"{name} holds a secret of {length} character(s): too short to take out of what is "
        f"printed and stored ({MIN_SECRET_LENGTH} at least), so it is left in; use a longer one"
        for name, length in too_short_to_redact(names).items()
    ]


def _gate_warnings(benchmark: Benchmark) -> list[str]:
    """A compare.failOn tier that no case can reach with the benchmark's runsPerRow."""
    if benchmark.red_team_only:  # no cases: its tier weighs attacks, each played runsPerRow
        return []
    gate, runs = benchmark.compare.fail_on, benchmark.runs_per_row
    reach = gate_reach(gate, runs)
    if reach.reachable:
        return []
    return [
        f"compare.failOn: {gate} can never fire with runsPerRow {runs}: even {runs}/{runs} "
        f"passing runs dropping to 0/{runs} give p = {reach.surest_drop_p_value:.3f} "
        f"(Fisher's one-sided exact test), and {gate} needs p < {reach.max_p_value:g}; "
        f"it takes at least {reach.fewest_runs} runs per case"
    ]


def _client(path: Path, n8n: N8nClient | None, what: str) -> N8nClient:
    if n8n is None:
        raise BenchmarkConfigError(
            path, [f"{what} is in n8n: set N8N_API_URL and N8N_API_KEY to check it"]
        )
    return n8n


def _workflow(benchmark: Benchmark, path: Path, n8n: N8nClient | None) -> dict[str, Any]:
    if isinstance(benchmark.workflow, N8nWorkflowRef):
        return fetch_workflow(_client(path, n8n, "workflow"), benchmark.workflow)
    with pointed_to_by(path):
        return read_workflow(benchmark.workflow)


def _records(
    benchmark: Benchmark, path: Path, n8n: N8nClient | None
) -> list[dict[str, Any]] | None:
    if benchmark.dataset is None or benchmark.dataset.data_table is None:
        return None
    return fetch_records(_client(path, n8n, "dataset.dataTable"), benchmark.dataset)


def _check_recordings(
    path: Path, benchmark: Benchmark, target: RecordedTarget, rows: list[DatasetRow], digest: str
) -> None:
    """Every recorded line of this version belongs to a dataset row and a run that will exist."""
    if target.columns is not None:
        missing = sorted(set(target.columns.values()) - set(rows[0].raw)) if rows else []
        if missing:
            raise BenchmarkConfigError(
                path, [f"target.columns: columns {missing} are not in the dataset"]
            )
        return
    assert target.outputs is not None
    lines = read_recorded_lines(target.outputs, target.workflow_hash)
    row_ids = {row.row_id for row in rows}
    refuse_unused_lines(target, lines, digest, row_ids, benchmark.runs_per_row)
