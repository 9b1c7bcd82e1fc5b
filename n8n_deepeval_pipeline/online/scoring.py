"""Production executions as the runs a metric scores, and the ``online_scores`` rows.

An execution is one run: the trigger's message as its input, what the workflow answered
as its output, the agent's tool calls as its steps. A chat session is one conversation:
its executions' messages and answers, in the order they were sent, as its turns. Each row
is tagged with the workflow version that served it (a session: its last message), as the
sensor named it from n8n's version id (``online.versions``); failing that, with the hash
of the workflow copy n8n stored with the execution, marked ``stored_copy``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeResolver
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nClient
from n8n_deepeval_pipeline.n8n_api.executions import execution_steps
from n8n_deepeval_pipeline.n8n_api.traffic_dataset import Exchange, exchange_of
from n8n_deepeval_pipeline.online.cursor import ItemKind, ScoreItem
from n8n_deepeval_pipeline.online.versions import (
    VersionMatch,
    execution_version_id,
    stored_copy_hash,
)
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    TableRow,
)
from n8n_deepeval_pipeline.workflow.anatomy import Anatomy, anatomy

RUN_NAME = "online"


class OnlineScore(TableRow):
    """One metric on one production execution or chat session."""

    table = "online_scores"

    workflow_hash: str
    """The version that served the item (a session: its last message), by the pipeline's
    hash of the saved workflow; see `version_match`."""
    n8n_version_id: str | None
    """n8n's id of that version (`workflowVersionId`), if n8n stored one."""
    version_match: VersionMatch
    """`version_id`: named by n8n's version id (a version the benchmark can register);
    `stored_copy`: the hash of the workflow n8n stored with the execution, defaults filled
    in (n8n gave no version id, or no longer keeps that version)."""
    score_id: str
    """`execution:<id>` or `session:<id>:<first execution>`: what a re-run replaces."""
    kind: ItemKind
    """`execution` or `session`."""
    item_key: str
    """The execution id, or the session id."""
    execution_ids: list[str]
    """The executions scored (a session's, in order)."""
    started_at: datetime
    """When the execution, or the session's first message, started (the day partition)."""
    scored_at: datetime
    """When it was scored."""
    metric: str
    """The metric's label."""
    metric_slug: str
    """The catalog slug."""
    score: float | None
    """The score (None when it errored)."""
    threshold: float
    """The threshold it passes at."""
    success: bool
    """Whether it passes."""
    reason: str | None
    """The judge's reason."""
    error_kind: str | None
    """Why it has no score, if so."""
    judge: str | None
    """`provider:model`."""
    dry_run: bool
    """Scored by the dry-run judge."""
    tokens: int
    """Judge tokens."""
    cost_usd: float | None
    """Judge cost."""


def score_id(item: ScoreItem) -> str:
    """The id of an item's rows: ``execution:<id>``, or ``session:<id>:<first execution>``.

    A chat that goes on after it was scored (within ``sessionResumeDays``) is scored again
    whole, from the same first execution: its new rows replace the earlier ones. One that
    goes on later starts from another execution, a conversation of its own.
    """
    if item.kind == "session":
        return f"session:{item.key}:{item.execution_ids[0]}"
    return f"execution:{item.key}"


class ServedVersion(BaseModel):
    """The version an item was served by, as its rows are tagged."""

    model_config = ConfigDict(frozen=True)

    workflow_hash: str
    n8n_version_id: str | None
    version_match: VersionMatch


def served_version(
    item: ScoreItem, found: list[dict[str, Any]], current_hash: str
) -> ServedVersion:
    """The version the sensor named, else the stored copy's hash (else the current one's)."""
    last = found[-1] if found else {}
    ran = item.n8n_version_id or execution_version_id(last)
    if item.workflow_hash is not None:
        return ServedVersion(
            workflow_hash=item.workflow_hash, n8n_version_id=ran, version_match="version_id"
        )
    copy = stored_copy_hash(last)
    return ServedVersion(
        workflow_hash=copy or current_hash, n8n_version_id=ran, version_match="stored_copy"
    )


def _turns(exchanges: list[Exchange]) -> list[dict[str, str]]:
    turns = []
    for exchange in exchanges:
        turns.append({"role": "user", "content": str(exchange.values["input"])})
        turns.append({"role": "assistant", "content": exchange.answer or ""})
    return turns


def _timing(found: list[dict[str, Any]]) -> tuple[datetime | None, float | None]:
    """When the item's executions started, and how long until the last one stopped."""
    started = [_moment(execution.get("startedAt")) for execution in found]
    stopped = [_moment(execution.get("stoppedAt")) for execution in found]
    first = min((moment for moment in started if moment), default=None)
    last = max((moment for moment in stopped if moment), default=None)
    if first is None:
        return None, None
    return first, round((last - first).total_seconds(), 4) if last and last >= first else None


def _moment(value: Any) -> datetime | None:
    """An execution's ISO time (n8n writes ``…Z``), or None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def fetch_executions(client: N8nClient, items: list[ScoreItem]) -> dict[int, dict[str, Any]]:
    """The items' executions with their data (one n8n has deleted since is left out)."""
    found = {}
    for number in sorted({n for item in items for n in item.execution_ids}):
        try:
            found[number] = client.execution(number)
        except N8nApiError as error:
            if error.status != 404:
                raise
    return found


class OnlineRuns:
    """The items of a run as dataset rows, runs and outputs, ready for an evaluation plan."""

    def __init__(
        self,
        items: list[ScoreItem],
        executions: dict[int, dict[str, Any]],
        workflow: dict[str, Any],
        current_hash: str,
    ) -> None:
        self.items = {score_id(item): item for item in items}
        self.current_hash = current_hash
        self.versions: dict[str, ServedVersion] = {}
        self.rows: list[DatasetRow] = []
        self.runs: list[ExpandedRun] = []
        self.outputs: list[AgentOutput] = []
        shape = anatomy(workflow)
        for item in items:
            found = [executions[number] for number in item.execution_ids if number in executions]
            self._add(item, found, shape)

    def _add(self, item: ScoreItem, found: list[dict[str, Any]], shape: Anatomy) -> None:
        identifier = score_id(item)
        served = served_version(item, found, self.current_hash)
        self.versions[identifier] = served
        version = served.workflow_hash
        exchanges = [e for e in (exchange_of(x, shape) for x in found) if e is not None]
        first = exchanges[0] if exchanges else None
        self.rows.append(DatasetRow(
            workflow_hash=version, row_id=identifier, position=1, raw={},
            input=None if first is None else str(first.values["input"]),
        ))  # fmt: skip
        self.runs.append(ExpandedRun(
            workflow_hash=version, run_id=identifier, case_id=identifier, run_index=1,
            row_id=identifier, run_name=RUN_NAME,
        ))  # fmt: skip
        self.outputs.append(self._output(item, identifier, version, found, exchanges))

    @staticmethod
    def _output(
        item: ScoreItem,
        identifier: str,
        version: str,
        found: list[dict[str, Any]],
        exchanges: list[Exchange],
    ) -> AgentOutput:
        if not exchanges or len(found) < len(item.execution_ids):
            return AgentOutput(
                workflow_hash=version, run_id=identifier, error_kind="target_error",
                error=f"{identifier}: n8n holds no message and answer for every execution "
                f"({len(exchanges)} of {len(item.execution_ids)} found)",
            )  # fmt: skip
        steps = [step for execution in found for step in execution_steps(execution) or []]
        started_at, latency_s = _timing(found)
        return AgentOutput(
            workflow_hash=version,
            run_id=identifier,
            actual_output=exchanges[-1].answer,
            intermediate_steps=steps,
            turns=_turns(exchanges) if item.kind == "session" else None,
            session_id=exchanges[-1].session,
            started_at=started_at,
            latency_s=latency_s,
        )

    def plans(
        self,
        benchmark: Benchmark,
        metrics: list[str],
        judge: JudgeResolver,
        timeout_s: float,
        prices: PriceTable,
    ) -> list[EvaluationPlan]:
        """An evaluation plan per kind: single-turn metrics per execution, others per session."""
        plans = []
        for kind in ("execution", "session"):
            chosen = [
                m for m in benchmark.metrics
                if m.result_label() in metrics and entry_for(m).needs_turns == (kind == "session")
            ]  # fmt: skip
            ids = {key for key, item in self.items.items() if item.kind == kind}
            if not chosen or not ids:
                continue
            subset = benchmark.model_copy(update={"metrics": chosen})
            plans.append(EvaluationPlan(
                subset, [r for r in self.runs if r.run_id in ids], self.rows, self.outputs,
                judge, timeout_s, prices,
            ))  # fmt: skip
        return plans

    def score_row(self, score: MetricScore, scored_at: datetime) -> OnlineScore:
        """The stored row of one metric's score of an item."""
        item = self.items[score.run_id]
        served = self.versions[score.run_id]
        return OnlineScore(
            workflow_hash=score.workflow_hash,
            n8n_version_id=served.n8n_version_id,
            version_match=served.version_match,
            score_id=score.run_id,
            kind=item.kind,
            item_key=item.key,
            execution_ids=[str(number) for number in item.execution_ids],
            started_at=item.started_at,
            scored_at=scored_at,
            metric=score.metric,
            metric_slug=score.metric_slug,
            score=score.score,
            threshold=score.threshold,
            success=score.success,
            reason=score.reason,
            error_kind=score.error_kind,
            judge=score.judge,
            dry_run=score.dry_run,
            tokens=score.tokens,
            cost_usd=score.cost_usd,
        )
