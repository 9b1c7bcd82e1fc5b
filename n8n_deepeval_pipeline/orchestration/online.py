"""Online evaluation of a benchmark: the sensor on production executions, its assets, its check.

The sensor reads the workflow's new executions in n8n (never calls the workflow), plans
what to score (``online.cursor``), names the workflow version that served each item
(``online.versions``), registers a version the benchmark has not as one of its version
partitions, and launches a run per day; ``online_scores`` scores the run's executions and
sessions and upserts them by score id, ``online_summary`` sums the day up per version,
warns when the last window's pass rate dropped from the window before, and checks the
newest version's pass rate against the version registered before it. Their partitions
are days, apart from the version partitions of the benchmark's own assets.
"""

# No postponed annotations: Dagster inspects the annotations of asset functions.
import hashlib
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef
from n8n_deepeval_pipeline.benchmark.online import OnlineConfig
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nClient
from n8n_deepeval_pipeline.n8n_api.data_table_sink import write_rows
from n8n_deepeval_pipeline.n8n_api.own_traffic import from_pipeline
from n8n_deepeval_pipeline.n8n_api.traffic_dataset import exchange_of
from n8n_deepeval_pipeline.online.cursor import (
    OnlineCursor,
    ScoreItem,
    SeenExecution,
    Tick,
    plan_tick,
)
from n8n_deepeval_pipeline.online.scoring import OnlineRuns, OnlineScore, fetch_executions
from n8n_deepeval_pipeline.online.version_check import VersionRegression, compare_newest_versions
from n8n_deepeval_pipeline.online.versions import (
    execution_version_id,
    remember,
    resolve,
    version_id,
)
from n8n_deepeval_pipeline.online.windows import (
    DaySummary,
    ItemRate,
    WindowComparison,
    compare_windows,
    summarise_day,
)
from n8n_deepeval_pipeline.orchestration.metadata_figures import shown
from n8n_deepeval_pipeline.orchestration.partitions import partitions_for
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nNotConfiguredError, N8nResource
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import UPSERT_KEY
from n8n_deepeval_pipeline.orchestration.resources.worker_pool import WorkerPoolResource
from n8n_deepeval_pipeline.orchestration.run_traces import send_trace, traces_wanted
from n8n_deepeval_pipeline.tables.frames import from_frame, to_frame
from n8n_deepeval_pipeline.tables.rows import MetricScore
from n8n_deepeval_pipeline.workflow.anatomy import Anatomy, anatomy
from n8n_deepeval_pipeline.workflow.hashing import version_key, workflow_hash

# The first day a daily partition can be; today's partition exists before the day ends.
FIRST_DAY = "2025-01-01"
DROP_CHECK = "no_pass_rate_drop"
VERSION_CHECK = "no_version_regression"


def online_partitions(benchmark: Benchmark) -> dg.DailyPartitionsDefinition:
    """One partition per UTC day (the day an execution started)."""
    return dg.DailyPartitionsDefinition(start_date=FIRST_DAY, end_offset=1)


def _key(benchmark: Benchmark, name: str) -> dg.AssetKey:
    return dg.AssetKey([benchmark.name, name])


def online_job_name(benchmark: Benchmark) -> str:
    """The job the online sensor launches."""
    return f"{benchmark.name}__online"


class OnlineItem(dg.Config):
    """One execution, or one chat session's executions, to score."""

    kind: str
    key: str
    execution_ids: list[int]
    started_at: str
    n8n_version_id: str | None = None
    workflow_hash: str | None = None

    def item(self) -> ScoreItem:
        return ScoreItem.model_validate(self.model_dump())


class OnlineBatch(dg.Config):
    """What the sensor handed to this run."""

    items: list[OnlineItem]


def _online(benchmark: Benchmark) -> OnlineConfig:
    assert benchmark.online is not None  # built only for benchmarks with an online section
    return benchmark.online


def _workflow_id(benchmark: Benchmark) -> str:
    assert isinstance(benchmark.workflow, N8nWorkflowRef)  # the model requires it with online
    return benchmark.workflow.id


def _score(
    benchmark: Benchmark,
    runs: OnlineRuns,
    judge: JudgeResource,
    worker_pool: WorkerPoolResource,
) -> list[MetricScore]:
    """Every metric's score of every item (each judge call's timing kept for a trace)."""
    plans = runs.plans(
        benchmark, _online(benchmark).metrics, judge.spec_for, worker_pool.timeout_s,
        judge.prices(),
    )  # fmt: skip
    kept = {"keep_judge_calls": traces_wanted()}
    scores = []
    for plan in plans:
        scores += plan.rows_without_output()
        tasks = [task.model_copy(update=kept) for task in plan.tasks]
        scores += [plan.row_for(result) for result in worker_pool.evaluate(tasks)]
    return scores


def _traced(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    workflow: dict[str, Any],
    runs: OnlineRuns,
    scores: list[MetricScore],
) -> dict[str, Any]:
    """The scored executions sent as one trace, when an endpoint is named; its metadata."""
    if not traces_wanted() or not runs.runs:
        return {}
    from n8n_deepeval_pipeline.tracing.exporter import content_on
    from n8n_deepeval_pipeline.tracing.version_trace import VersionRun

    outputs = {output.run_id: output for output in runs.outputs}
    started = [output.started_at for output in runs.outputs if output.started_at]
    now = datetime.now(UTC)
    run = VersionRun(
        root_name=f"online {benchmark.name}",
        benchmark=benchmark.name,
        workflow_name=str(workflow.get("name") or benchmark.name),
        workflow_hash=runs.current_hash,
        started=min(started, default=now),
        ended=now,
        runs=runs.runs,
        outputs=outputs,
        scores=scores,
        inputs={row.row_id: row.input for row in runs.rows},
        dagster_run_id=context.run_id,
        content=content_on(),
    )
    return send_trace(context, run)


def _scores_metadata(rows: list[OnlineScore], items: int) -> dict[str, Any]:
    costs = [row.cost_usd for row in rows if row.cost_usd is not None]
    return shown(
        {
            "items": items,
            "scores": len(rows),
            "score_pass_rate": sum(r.success for r in rows) / len(rows) if rows else 0.0,
            "errors": sum(r.error_kind is not None for r in rows),
            "cost_usd": float(sum(costs)),
            "dry_run": any(r.dry_run for r in rows),
            "versions": ", ".join(sorted({r.workflow_hash[:12] for r in rows})),
        }
    )


def _build_scores_asset(benchmark: Benchmark, group: str) -> dg.AssetsDefinition:
    @dg.asset(
        name="online_scores",
        key_prefix=[benchmark.name],
        group_name=group,
        partitions_def=online_partitions(benchmark),
        metadata={"partition_expr": "started_at", UPSERT_KEY: "score_id"},
        description="Reference-free scores of sampled production executions and chat "
        "sessions, each tagged with the workflow version that served it.",
    )
    def online_scores(
        context: dg.AssetExecutionContext,
        config: OnlineBatch,
        n8n: N8nResource,
        judge: JudgeResource,
        worker_pool: WorkerPoolResource,
    ) -> pd.DataFrame:
        items = [entry.item() for entry in config.items]
        workflow, _ = n8n.workflow(benchmark)
        with n8n.client() as client:
            executions = fetch_executions(client, items)
            runs = OnlineRuns(items, executions, workflow, workflow_hash(workflow))
            scores = _score(benchmark, runs, judge, worker_pool)
            now = datetime.now(UTC)
            rows = [runs.score_row(score, now) for score in scores]
            sink = benchmark.sink.online_scores if benchmark.sink else None
            if sink is not None and rows:
                done = write_rows(client, sink, rows, ("scoreId", "metric"), OnlineScore)
                context.log.info(
                    f"{sink.data_table}: {done.written} rows written, "
                    f"{done.already_there} already there"
                )
        traced = _traced(context, benchmark, workflow, runs, scores)
        context.add_output_metadata({**_scores_metadata(rows, len(items)), **traced})
        return to_frame(OnlineScore, rows)

    return online_scores


def _summary_metadata(total: DaySummary, comparison: WindowComparison) -> dict[str, Any]:
    return shown(
        {
            "online_pass_rate": total.pass_rate if total.pass_rate is not None else 0.0,
            "items": total.items,
            "executions": total.executions,
            "sessions": total.sessions,
            "errors": total.errors,
            "cost_usd": total.cost_usd,
            "tokens": total.tokens,
            **{f"mean/{metric}": mean for metric, mean in total.metric_means.items()},
            "window_verdict": comparison.verdict,
        }
    )


def _verdict_metadata(verdict: str, p_value_drop: float | None) -> dict[str, Any]:
    return {"verdict": verdict, "p_value_drop": p_value_drop if p_value_drop is not None else 1.0}


def _rate_metadata(side: str, rate: ItemRate) -> dict[str, Any]:
    """A side's items, pass rate and Wilson interval, under ``side/``."""
    found: dict[str, Any] = {
        f"{side}/items": rate.items,
        f"{side}/pass_rate": rate.rate if rate.rate is not None else 0.0,
    }
    if rate.interval is not None:
        found[f"{side}/wilson"] = f"[{rate.interval.lower:.3f}, {rate.interval.upper:.3f}]"
    return found


def _check_metadata(comparison: WindowComparison) -> dict[str, Any]:
    """The verdict, p-value, and each window's pass rate, items and Wilson interval."""
    found = _verdict_metadata(comparison.verdict, comparison.p_value_drop)
    for side, window in (("before", comparison.before), ("last", comparison.last)):
        found[f"{side}/days"] = f"{window.first_day} … {window.last_day}"
        found.update(_rate_metadata(side, window))
    return shown(found)


def _version_metadata(comparison: VersionRegression) -> dict[str, Any]:
    """The verdict, p-value, and each version's key, items, pass rate and Wilson interval."""
    found = _verdict_metadata(comparison.verdict, comparison.p_value_drop)
    for side, rate in (("baseline", comparison.baseline), ("candidate", comparison.candidate)):
        if rate is not None:
            found[f"{side}/version"] = rate.version
            found.update(_rate_metadata(side, rate))
    return shown(found)


def _build_summary_asset(benchmark: Benchmark, group: str) -> dg.AssetsDefinition:
    online = _online(benchmark)
    check, versions = online.drop_check, online.version_check
    fail_on = versions.fail_on or benchmark.compare.fail_on
    scores_key = _key(benchmark, "online_scores")
    # The day's scores and enough days before it for both windows of the drop check, and
    # for the days each version's items are counted over.
    days = max(2 * check.window_days, versions.lookback_days)
    window = dg.TimeWindowPartitionMapping(
        start_offset=-(days - 1), allow_nonexistent_upstream_partitions=True
    )
    version_partitions = partitions_for(benchmark).name or ""

    @dg.asset(
        name="online_summary",
        key_prefix=[benchmark.name],
        group_name=group,
        partitions_def=online_partitions(benchmark),
        ins={"online_scores": dg.AssetIn(key=scores_key, partition_mapping=window)},
        metadata={"partition_expr": "day"},
        check_specs=[
            dg.AssetCheckSpec(
                DROP_CHECK,
                asset=_key(benchmark, "online_summary"),
                description=f"The pass rate of the last {check.window_days} day(s) did not "
                f"drop from the {check.window_days} before ({check.fail_on} or surer).",
            ),
            dg.AssetCheckSpec(
                VERSION_CHECK,
                asset=_key(benchmark, "online_summary"),
                description="The newest workflow version's production pass rate (items of the "
                f"last {versions.lookback_days} day(s)) did not drop from the version "
                f"registered before it ({fail_on} or surer), as the benchmark's "
                "no_regression check compares versions.",
            ),
        ],
        description="A day of online scores per workflow version: items, pass rate with "
        "its Wilson interval, errors, judge cost.",
    )
    def online_summary(
        context: dg.AssetExecutionContext, online_scores: pd.DataFrame
    ) -> Iterator[dg.Output[pd.DataFrame] | dg.AssetCheckResult]:
        day = date.fromisoformat(context.partition_key)
        scores = from_frame(OnlineScore, online_scores)
        by_version: dict[str, list[OnlineScore]] = defaultdict(list)
        for score in scores:
            by_version[score.workflow_hash].append(score)
        rows = [summarise_day(day, of_version, version)
                for version, of_version in sorted(by_version.items())]  # fmt: skip
        rows = [row for row in rows if row.items]
        total = summarise_day(day, scores, "all")
        comparison = compare_windows(scores, day, check)
        since = day - timedelta(days=versions.lookback_days - 1)
        registered = context.instance.get_dynamic_partitions(version_partitions)
        newest = compare_newest_versions(
            [score for score in scores if since <= score.started_at.date() <= day],
            registered,
            fail_on,
        )
        metadata = {**_summary_metadata(total, comparison), "version_verdict": newest.verdict}
        yield dg.Output(to_frame(DaySummary, rows), metadata=metadata)
        yield dg.AssetCheckResult(
            check_name=DROP_CHECK,
            passed=not comparison.dropped,
            severity=dg.AssetCheckSeverity.WARN,
            metadata=_check_metadata(comparison),
        )
        yield dg.AssetCheckResult(
            check_name=VERSION_CHECK,
            passed=not newest.regressed,
            metadata=_version_metadata(newest),
        )

    return online_summary


def build_online_job(benchmark: Benchmark) -> Any:
    """Score what the sensor hands on, then sum the day up and check it."""
    return dg.define_asset_job(
        name=online_job_name(benchmark),
        selection=dg.AssetSelection.assets(
            _key(benchmark, "online_scores"), _key(benchmark, "online_summary")
        ),
        partitions_def=online_partitions(benchmark),
        description=f"Score production executions of {benchmark.name}'s workflow that the "
        "online sensor sampled; never calls the workflow.",
    )


def build_online_assets(benchmark: Benchmark) -> list[dg.AssetsDefinition]:
    """``online_scores`` and ``online_summary``, in their own group."""
    group = f"{benchmark.name}_online"
    return [_build_scores_asset(benchmark, group), _build_summary_asset(benchmark, group)]


def seen_execution(execution: dict[str, Any], session: str | None) -> SeenExecution:
    """What the cursor needs of an execution listed by n8n (with its data)."""
    started = execution.get("startedAt") or execution.get("createdAt")
    return SeenExecution(
        id=int(execution["id"]),
        started_at=datetime.fromisoformat(str(started).replace("Z", "+00:00")),
        mode=execution.get("mode"),
        status=execution.get("status"),
        session=session,
        version_id=execution_version_id(execution),
        from_pipeline=from_pipeline(execution),
    )


def new_executions(
    client: N8nClient, workflow: dict[str, Any], workflow_id: str, after: int
) -> list[SeenExecution]:
    """The workflow's executions with an id above ``after``, pages read until one is not."""
    shape = anatomy(workflow)
    seen: list[SeenExecution] = []
    for page in client.execution_pages(workflow_id):
        for execution in page:
            if int(execution["id"]) <= after:
                return seen
            seen.append(_seen(execution, shape))
    return seen


def pending_executions(
    client: N8nClient, workflow: dict[str, Any], pending: list[int]
) -> list[SeenExecution]:
    """The executions still running at an earlier tick, as they are now."""
    shape = anatomy(workflow)
    pending_item = ScoreItem(
        kind="execution", key="pending", execution_ids=pending, started_at=datetime.now(UTC)
    )
    found = fetch_executions(client, [pending_item])
    return [_seen(execution, shape) for execution in found.values()]


def _seen(execution: dict[str, Any], shape: Anatomy) -> SeenExecution:
    found = exchange_of(execution, shape) if shape.trigger else None
    return seen_execution(execution, found.session if found else None)


def cost_today(instance: dg.DagsterInstance, key: dg.AssetKey, now: datetime) -> float:
    """The judge cost of ``online_scores`` materialised since midnight UTC."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, after_timestamp=midnight.timestamp()), limit=10_000
    ).records
    total = 0.0
    for record in records:
        materialization = record.asset_materialization
        cost = materialization.metadata.get("cost_usd") if materialization else None
        total += float(cost.value) if cost is not None else 0.0  # type: ignore[arg-type]
    return total


def _metric_kinds(benchmark: Benchmark) -> tuple[bool, bool]:
    """Whether the online metrics include single-turn ones, and conversational ones."""
    chosen = [m for m in benchmark.metrics if m.result_label() in _online(benchmark).metrics]
    turns = [entry_for(metric).needs_turns for metric in chosen]
    return not all(turns), any(turns)


def name_versions(
    client: N8nClient, workflow_id: str, items: list[ScoreItem], known: dict[str, str]
) -> list[ScoreItem]:
    """The items, each with the hash of the version that served it when it can be named.

    ``known`` (n8n version id → hash, the cursor's) gains the versions read from n8n's
    history; a version n8n no longer keeps is asked for once a tick.
    """
    missing: set[str] = set()

    def saved(version: str) -> dict[str, Any] | None:
        found = None if version in missing else client.workflow_version(workflow_id, version)
        if found is None:
            missing.add(version)
        return found

    return [
        item.model_copy(update={"workflow_hash": resolve(item.n8n_version_id, known, saved)})
        for item in items
    ]


def versions_to_register(
    instance: dg.DagsterInstance, benchmark: Benchmark, items: list[ScoreItem]
) -> list[dg.AddDynamicPartitionsRequest]:
    """The versions that served the items and are none of the benchmark's yet, oldest first."""
    name = partitions_for(benchmark).name or ""
    new: list[str] = []
    for item in sorted(items, key=lambda item: item.started_at):
        if item.workflow_hash is None:
            continue
        key = version_key(item.workflow_hash)
        if key not in new and not instance.has_dynamic_partition(name, key):
            new.append(key)
    return [dg.AddDynamicPartitionsRequest(name, new)] if new else []


def run_requests(benchmark: Benchmark, tick: Tick) -> list[dg.RunRequest]:
    """A run per day of the tick's items; its run key names them, so a re-tick runs none twice.

    A session's executions are in its key: a chat scored again whole, once it went on, is
    a run of its own, never taken for the run that scored its first part.
    """
    by_day: dict[str, list[ScoreItem]] = defaultdict(list)
    for item in tick.items:
        by_day[item.day].append(item)
    op = _key(benchmark, "online_scores").to_python_identifier()
    requests = []
    for day, items in sorted(by_day.items()):
        listed = [item.model_dump(mode="json") for item in items]
        ids = ",".join(
            f"{item.kind}:{item.key}:{'+'.join(map(str, item.execution_ids))}" for item in items
        )
        requests.append(dg.RunRequest(
            run_key=f"online:{day}:{hashlib.sha256(ids.encode()).hexdigest()[:16]}",
            partition_key=day,
            run_config={"ops": {op: {"config": {"items": listed}}}},
            tags={"n8n_deepeval/trigger": "online", "n8n_deepeval/items": str(len(items))},
        ))  # fmt: skip
    return requests


def _start(n8n: N8nResource, workflow_id: str, known: dict[str, str]) -> dg.SensorResult:
    """The first tick: where the traffic stands (the workflow's past is not scored)."""
    with n8n.client() as client:
        newest = next(iter(next(client.execution_pages(workflow_id, page_size=1), [])), None)
    last_id = int(newest["id"]) if newest is not None else 0
    cursor = OnlineCursor(started=True, last_id=last_id, versions=known)
    return dg.SensorResult(
        skip_reason=f"online evaluation starts after execution {last_id}",
        cursor=cursor.model_dump_json(),
    )


def _left_out(tick: Tick) -> str:
    return (
        f"not sampled {tick.not_sampled} · over maxPerHour {tick.capped} · "
        f"not a success {tick.not_scored_status} · not production {tick.not_production} · "
        f"the pipeline's own {tick.from_pipeline} · "
        f"open sessions {len(tick.cursor.open_sessions)}"
    )


def build_online_sensor(benchmark: Benchmark, job: Any) -> dg.SensorDefinition:
    """Read new production executions, plan what to score, launch a run per day."""
    online = _online(benchmark)
    single_turn, conversational = _metric_kinds(benchmark)
    scores_key = _key(benchmark, "online_scores")

    @dg.sensor(
        name=f"{benchmark.name}__online",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def online_sensor(
        context: dg.SensorEvaluationContext, n8n: N8nResource
    ) -> dg.SensorResult | dg.SkipReason:
        now = datetime.now(UTC)
        spent = cost_today(context.instance, scores_key, now)
        limit = online.max_cost_usd_per_day
        if limit is not None and spent >= limit:
            return dg.SkipReason(
                f"judge cost today ${spent:.4f} reached online.maxCostUsdPerDay ${limit:.4f}: "
                "scoring resumes tomorrow (UTC) from where it stopped"
            )
        cursor = OnlineCursor.read(context.cursor)
        workflow_id = _workflow_id(benchmark)
        try:
            workflow, _ = n8n.workflow(benchmark)
            known = dict(cursor.versions)
            current = version_id(workflow)
            if current is not None:  # every version seen current is named, pruned or not
                remember(known, current, workflow_hash(workflow))
            if not cursor.started:
                return _start(n8n, workflow_id, known)
            with n8n.client() as client:
                seen = new_executions(client, workflow, workflow_id, cursor.last_id)
                seen += pending_executions(client, workflow, cursor.pending)
                tick = plan_tick(cursor, seen, online, now, single_turn, conversational)
                items = name_versions(client, workflow_id, tick.items, known)
        except (N8nApiError, N8nNotConfiguredError) as error:
            return dg.SkipReason(f"cannot read the executions now: {error}")
        no_session = anatomy(workflow).no_session if conversational else None
        if no_session is not None:  # the workflow changed since validate refused this
            context.log.warning(f"conversational online metrics score no session: {no_session}")
        tick = tick.model_copy(
            update={"items": items, "cursor": tick.cursor.model_copy(update={"versions": known})}
        )
        requests = run_requests(benchmark, tick)
        register = versions_to_register(context.instance, benchmark, items)
        for request in register:
            context.log.info(
                f"versions first seen in production: {', '.join(request.partition_keys)}"
            )
        context.log.info(f"{len(tick.items)} to score ({_left_out(tick)})")
        return dg.SensorResult(
            run_requests=requests,
            dynamic_partitions_requests=register,
            skip_reason=None if requests else f"nothing to score: {_left_out(tick)}",
            cursor=tick.cursor.model_dump_json(),
        )

    return online_sensor
