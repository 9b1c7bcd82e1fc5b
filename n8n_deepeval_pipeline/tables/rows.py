"""One row model per stored table: the domain code and the storage both use these.

Every table carries the full ``workflow_hash``; the partition key is its version key
(the first 12 hex, ``workflow.hashing.version_key``). Fields holding lists or objects
are stored as JSON text by ``tables.frames``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from n8n_deepeval_pipeline.judging.failures import JudgeFailureKind
from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.workflow.checks import CheckCategory, CheckStatus
from n8n_deepeval_pipeline.workflow.hashing import version_key

# A run without output was once stored as "no_output" too; one name is kept for it now, the
# one `compare` and the failure categories use, and rows stored before read back under it.
_RETIRED_ERROR_KINDS = {"no_output": "target_error"}


def _current_error_kind(kind: Any) -> Any:
    return _RETIRED_ERROR_KINDS.get(kind, kind) if isinstance(kind, str) else kind


class TableRow(BaseModel):
    """A row of one of the pipeline's tables; every table carries its version's hash.

    Each subclass names its table (``table``); the string under each field describes the
    column on the documentation's tables page.
    """

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)
    table: ClassVar[str]

    workflow_hash: str
    """The full workflowHash of the version (the partition key is its first 12 hex)."""


class WorkflowSnapshot(TableRow):
    """The workflow version a partition stands for."""

    table = "workflow_snapshot"

    workflow_id: str | None
    """The workflow's id in n8n (None for an exported file without one)."""
    name: str | None
    """The workflow's name."""
    node_count: int
    """Nodes in the workflow."""
    source: str
    """Where the workflow was read: a file path, or the n8n API."""
    fetched_at: datetime
    """When it was read."""
    canonical_json: str
    """The canonical JSON the hash is computed from."""
    variant: str | None = None
    """The variant of the workflow (`target.variants`) this version is; None: the workflow
    itself. A variant's baseline is its workflow; it is never the baseline of an edit."""
    base_hash: str | None = None
    """A variant's workflow: the hash of the workflow its parameters were set on."""


class DatasetRow(TableRow):
    """A dataset row with its mapped DeepEval fields (snake_case) and the source row."""

    table = "dataset_rows"

    row_id: str
    """The row's id (`dataset.idColumn`)."""
    position: int
    """1-based position in the source file, for error messages."""
    input: str | None = None
    """The user's input (`columnMapping.input`)."""
    expected_output: str | None = None
    """The expected answer."""
    context: list[str] | None = None
    """Ideal context passages (Hallucination reads them)."""
    retrieval_context: list[str] | None = None
    """The passages retrieved (the RAG metrics read them)."""
    expected_tools: list[str] | None = None
    """The tools the workflow should call."""
    label: str | None = None
    """A label for the consistency statistics."""
    turns: Any = None
    """Chat history before the run, in any n8n memory form."""
    chatbot_role: str | None = None
    """The role a conversation's assistant should keep."""
    expected_outcome: str | None = None
    """What a conversation should achieve."""
    scenario: str | None = None
    """The situation a conversation plays out."""
    user_description: str | None = None
    """Who the simulated user is (a conversational golden's `userDescription`)."""
    input_images: list[str] | None = None
    """Images given with the input (`columnMapping.inputImages`): data URIs, http(s) URLs
    or files beside the dataset, as written."""
    raw: dict[str, Any]
    """Every column of the source row, as read."""


class ExpandedRun(TableRow):
    """A dataset row × run index, with the seed's ids."""

    table = "expanded_runs"

    run_id: str
    """`<case_id>:<run_index>`."""
    case_id: str
    """`<workflow_hash>:<row_id>`."""
    run_index: int
    """0-based repetition of the row (`runsPerRow`)."""
    row_id: str
    """The dataset row's id."""
    run_name: str
    """The benchmark's `runName` (default: its name)."""
    data_table_id: str | None = None
    """The n8n Data Table the row came from, if any."""


class AgentOutput(TableRow):
    """What the workflow produced for one run (or why it produced nothing).

    A simulated run's output is its conversation: ``turns`` (each assistant turn with the
    ``intermediateSteps`` it called), why it stopped, and what the simulated user's judge
    calls cost (``simulation``); its error kinds include the judge's when the simulated
    user could not be played.
    """

    table = "agent_outputs"

    run_id: str
    """The run."""
    actual_output: str | None = None
    """The workflow's answer, as text."""
    intermediate_steps: list[Any] | None = None
    """The AI Agent's tool calls (`intermediateSteps`)."""
    turns: list[Any] | None = None
    """Chat memory after the run."""
    label: str | None = None
    """A recorded label for the consistency statistics."""
    session_id: str | None = None
    """The chat session the run used (one per run)."""
    latency_s: float | None = None
    """Seconds the workflow took to answer."""
    error: str | None = None
    """Why the run has no output (status and a short reason)."""
    error_kind: Literal["target_error", JudgeFailureKind] | None = None
    """`target_error`: the workflow gave nothing to score (a failed call, nothing recorded,
    no answer; rows stored as `no_output` read back so); a judge's failure
    (`judge_error`, `judge_rate_limited`, `judge_auth`, `judge_unavailable`, …): the
    simulated user's judge failed, named as a score's judge failure is."""
    stop_reason: str | None = None
    """Why a simulated conversation ended: `outcome_reached`, `turn_limit`,
    `empty_user_turn`, `target_error` or `judge_error`."""
    simulation: dict[str, Any] | None = None
    """The simulated user's side: its turns, judge calls and cost."""
    # The workflow's own language-model usage in the run, read from its executions.
    llm_prompt_tokens: int | None = None
    """Prompt tokens of the workflow's own model calls in the run (None: not measured, as
    for recorded outputs or a webhook whose workflow is not named)."""
    llm_completion_tokens: int | None = None
    """Completion tokens of the workflow's own model calls in the run."""
    llm_tokens_estimated: bool | None = None
    """Some calls' tokens are n8n's estimate (`tokenUsageEstimate`): the provider gave none."""
    llm_cost_usd: float | None = None
    """What those calls cost (USD); None also when a model has no price: unpriced."""
    llm_usage: list[dict[str, Any]] | None = None
    """Per model node: its model, calls, prompt and completion tokens, estimated, cost."""
    started_at: datetime | None = None
    """When the workflow was called (None: recorded outputs, or a row stored before)."""
    mcp_servers: list[dict[str, Any]] | None = None
    """The MCP servers the agent's MCP Client Tool nodes reached: each node's name, transport
    and the tools, resources and prompts its server offered (None: no MCP Client Tool)."""
    images: list[dict[str, Any]] | None = None
    """The run's images, by hash (`output_images` holds them): `{sha256, mimeType, role}`,
    role `input` (given to the workflow) or `output` (in its answer, where its text has
    `[DEEPEVAL:IMAGE:<sha256>]`)."""

    _error_kind = field_validator("error_kind", mode="before")(_current_error_kind)


class OutputImage(TableRow):
    """One image of a version's runs, kept once by its content hash.

    Images in outputs and inputs are stored here rather than in every row that shows them:
    a row names an image by its hash (`agent_outputs.images`, and the
    `[DEEPEVAL:IMAGE:<sha256>]` markers of its text).
    """

    table = "output_images"

    sha256: str
    """SHA-256 of the image's bytes (of its URL for a remote image, never fetched)."""
    mime_type: str | None
    """Its type, `image/png`…"""
    byte_size: int | None
    """Its size in bytes (None: a remote image)."""
    data_base64: str | None
    """Its bytes, base64 (None: a remote image)."""
    url: str | None
    """A remote image's URL (DeepEval sends a remote image to the judge as its URL)."""


class MetricScore(TableRow):
    """One metric on one run."""

    table = "metric_scores"

    run_id: str
    """The run scored."""
    case_id: str
    """The run's case."""
    metric: str
    """The metric's label in the benchmark."""
    metric_slug: str
    """The catalog slug (`g_eval`, `bias`, …)."""
    score: float | None
    """The score in the metric's direction (None when it errored)."""
    threshold: float
    """The threshold it passes at (`strictMode` pins it)."""
    success: bool
    """Whether the score passes; an errored metric fails."""
    direction: Direction
    """`higher_is_better` or `lower_is_better`."""
    reason: str | None
    """The judge's reason (dry-run scores say so)."""
    error: str | None
    """What went wrong, redacted."""
    error_kind: str | None
    """`missing_input`, `target_error`, `judge_error`, `judge_auth`, `timeout`, …"""
    judge: str | None
    """`provider:model` (a panel's as `a, b, c`)."""
    dry_run: bool
    """Scored by the dry-run judge: a placeholder, not a judgement."""
    judge_calls: int
    """Calls made to the judge."""
    judge_retries: int
    """Calls retried (429, 5xx, timeouts)."""
    cached_calls: int
    """Answers served by the judge cache."""
    prompt_tokens: int
    """Tokens sent."""
    completion_tokens: int
    """Tokens answered."""
    tokens: int
    """Both."""
    cost_usd: float | None
    """Cost from the price table (None for an unknown model)."""
    latency_s: float
    """Seconds the evaluation took."""
    score_path: str | None = None
    """`logprob_weighted` (G-Eval's score weighted by the judge's log-probabilities) or
    `schema_fallback` (the judge has none: DeepEval's integer score); None: not asked."""
    panel: str | None = None
    """A judge panel's rule: `majority` or `mean` (None: one judge)."""
    judge_agreement: float | None = None
    """Share of the panel's answering judges whose verdict is the panel's."""
    judge_scores: list[dict[str, Any]] | None = None
    """Each panel judge's score, verdict, reason or error, calls, tokens and cost."""
    started_at: datetime | None = None
    """When the evaluation started; kept, as `judge_call_log`, only while traces are
    exported (`N8N_DEEPEVAL_OTLP_ENDPOINT`)."""
    judge_call_log: list[dict[str, Any]] | None = None
    """Each judge call: judge, provider, model, start, duration, tokens, cost, retries,
    cache hit, error (None: not kept, traces are not exported)."""

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

    table = "run_aggregates"

    run_id: str
    """The run."""
    case_id: str
    """The run's case."""
    overall_score: float | None
    """Mean of the counted metrics' direction-normalised scores (None: the run errored)."""
    raw_mean_score: float | None
    """The seed's plain mean of the scores."""
    overall_success: bool
    """Whether the run passes its pass rule."""
    pass_rule: str
    """`allPass`, `anyPass` or `majorityPass`."""
    metrics_passed: int
    """Counted metrics that passed."""
    metrics_counted: int
    """Metrics the pass rule counts (`aggregate.metrics`)."""
    metric_errors: int
    """Counted metrics that errored (they count as failed)."""
    judge_calls: int
    """The run's judge calls."""
    tokens: int
    """The run's judge tokens."""
    cost_usd: float | None
    """The run's judge cost."""
    metrics: list[dict[str, Any]]
    """Each counted metric's outcome."""


class ConsistencyStats(TableRow):
    """Consistency of one case's repeated runs."""

    table = "consistency_stats"

    case_id: str
    """The group's value of `consistency.groupByField` (default: the case id)."""
    n_runs: int
    """Runs in the group."""
    mean_score: float | None
    """Mean overall score."""
    variance: float | None
    """Population variance of the overall scores."""
    std: float | None
    """Population standard deviation."""
    cv: float | None
    """Coefficient of variation: sample SD / mean (0 for a zero mean or a single run)."""
    min_score: float | None
    """Lowest overall score."""
    max_score: float | None
    """Highest overall score."""
    pass_rate: float
    """Share of the runs that passed."""
    majority_success: bool
    """Whether more than half passed."""
    pass_at_k: dict[int, float]
    """pass@k for k = 1..runs, 1 − C(n−c,k)/C(n,k): the chance that one of k runs passes."""
    pass_hat_k: dict[int, float]
    """pass^k for k = 1..runs, C(c,k)/C(n,k): the chance that all k runs pass."""
    metric_stats: list[dict[str, Any]]
    """Per metric: runs, mean, std, variance, min, max, cv, pass rate, majority success."""
    label_distribution: dict[str, int] | None
    """How often each label (`consistency.labelField`) came out."""
    label_entropy: float | None
    """Shannon entropy of the labels, in bits."""
    label_normalized_entropy: float | None
    """Entropy over log2 of the number of distinct labels (0 for one label)."""
    label_agreement: float | None
    """Share of the runs with the majority label."""
    majority_label: str | None
    """The most frequent label."""
    consistency_basis: str
    """`cv`, `entropy` or `agreement`: what `overall_consistency` is made from."""
    overall_consistency: float | None
    """`cv`: 1 − min(1, mean per-metric cv); `entropy`: 1 − normalised entropy;
    `agreement`: the label agreement."""


class CaseVerdict(TableRow):
    """One case of a version (the candidate) against its baseline version."""

    table = "version_comparison"

    baseline_hash: str
    """The baseline version's full hash."""
    row_id: str
    """The dataset row both versions ran."""
    baseline_passed: int
    """Passing runs in the baseline."""
    baseline_runs: int
    """Runs in the baseline."""
    candidate_passed: int
    """Passing runs in the candidate."""
    candidate_runs: int
    """Runs in the candidate."""
    delta: float | None
    """Candidate pass rate − baseline pass rate."""
    p_value_drop: float | None
    """One-sided Fisher's exact test p-value of a drop."""
    p_value_rise: float | None
    """One-sided Fisher's exact test p-value of a rise."""
    verdict: str
    """`regression`, `likely_regression`, `unreliable_baseline`, `improvement`,
    `worth_watching`, `stable` or `insufficient_data`."""


LabelSource = Literal["review", "import", "data_table"]


class HumanLabel(TableRow):
    """A person's verdict on one metric of one run: the judge's result, checked by hand.

    Not a partition's output: labels are the user's data, upserted one by one as they are
    given (by run, metric and reviewer) and never replaced by a benchmark's re-run.
    """

    table = "human_labels"

    run_id: str
    """The run labelled (a benchmark run's id, or an online item's `score_id`)."""
    metric: str
    """The metric's label in the benchmark."""
    reviewer: str
    """Who gave the label."""
    passed: bool | None
    """The person's verdict: the run passes the metric (None: a rating of 3 gave none)."""
    rating: int | None
    """An optional 1–5 rating (5: best)."""
    comment: str | None
    """What the reviewer wrote."""
    labelled_at: datetime
    """When the label was given (UTC)."""
    source: LabelSource
    """`review` (the review queue), `import` (a CSV or JSONL file) or `data_table` (an n8n
    Data Table)."""


class WorkflowCheck(TableRow):
    """One deterministic check of a workflow version (``workflow.checks``)."""

    table = "workflow_checks"

    check_id: str
    """The check, e.g. `inbound_triggers_authenticated`."""
    category: CheckCategory
    """`structure`, `connection_topology`, `ai_nodes` or `security`."""
    status: CheckStatus
    """`pass`, `fail` or `not_applicable`."""
    message: str
    """What the check found."""
    nodes: list[str]
    """The nodes the check concerns."""
