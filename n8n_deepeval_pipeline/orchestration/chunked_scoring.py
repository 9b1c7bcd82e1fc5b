"""The ``metric_scores`` asset as a graph: plan → one step per chunk → collect.

``plan`` turns the partition's runs into an ``EvaluationPlan`` and splits its tasks into
chunks (``tables.scoring_chunks``: ``chunk_size`` evaluations at most, run config or
``$N8N_DEEPEVAL_CHUNK_SIZE``); ``score`` is mapped over the chunks, each a step of its own
with its own worker pool, so whatever executor runs the job (multiprocess on one machine,
Celery on a fleet, a Kubernetes job per step) runs the chunks in parallel; ``collect``
writes the table, its metadata and its checks, exactly as the single step did.

Chunks pass through ``step_io_manager`` (files under ``$N8N_DEEPEVAL_HOME/steps``, or
PostgreSQL when steps run on several machines), so re-executing a run from failure runs
again only the chunks that failed and reads the others' rows from the failed run. Each
chunk rebuilds only its own tasks from the stored upstream tables, so its memory does not
grow with the benchmark, and journals what it finishes (``score_journal``: on this machine,
or in PostgreSQL for a fleet, where a step re-delivered after its machine was lost resumes)
until the table is stored: a new run after a kill resumes the chunks that had finished
too, and charges what they cost to the run that made them.

``collect`` charges each Dagster run (attempt) its judge calls: the chunks' and the
simulated users' (the agent_outputs step's ledger), as the judge answered them; it then
forgets them, but those of a run of the same version still going beside it.
"""

# No postponed annotations: Dagster inspects the annotations of op functions.
import os
import resource
import statistics
from collections.abc import Iterator
from statistics import fmean
from typing import Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline import environment_variables
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.orchestration.metadata_figures import shown
from n8n_deepeval_pipeline.orchestration.partitions import version_check
from n8n_deepeval_pipeline.orchestration.progress import say_progress
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.score_journal import (
    SIMULATION_LEDGER,
    ScoreJournal,
    ScoreJournalResource,
)
from n8n_deepeval_pipeline.orchestration.resources.worker_pool import WorkerPoolResource
from n8n_deepeval_pipeline.orchestration.run_owner import unfinished_runs
from n8n_deepeval_pipeline.orchestration.run_traces import traces_wanted
from n8n_deepeval_pipeline.statistics.aggregate import mean_of_present
from n8n_deepeval_pipeline.summary.outcome import Limits, incompleteness
from n8n_deepeval_pipeline.summary.run_summary import error_summary, judge_usage
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan
from n8n_deepeval_pipeline.tables.frames import from_frame, to_frame
from n8n_deepeval_pipeline.tables.head_to_head import family_of
from n8n_deepeval_pipeline.tables.judge_spend import (
    JudgeSpend,
    merged,
    spend_by_run,
    with_answered_calls,
)
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    OutputImage,
    WorkflowSnapshot,
    of_version,
)
from n8n_deepeval_pipeline.tables.scoring_chunks import (
    ChunkScores,
    KnownScores,
    ScoreChunk,
    plan_chunks,
)
from n8n_deepeval_pipeline.tables.steps import snapshot_tools

CHUNK_SIZE_ENV = "N8N_DEEPEVAL_CHUNK_SIZE"
ATTEMPTS_METADATA = "attempts/judge_spend"
"""Metadata of ``metric_scores``: each Dagster run's judge spend on the version's scores."""
STEP_IO_MANAGER = "step_io_manager"
"""Resource key of the IO manager that keeps chunk specs and chunk rows between steps."""


class MetricScoresConfig(dg.Config):
    """Launch-time knobs of the ``metric_scores`` asset (all its steps)."""

    timeout_s: float | None = None
    """Per-evaluation timeout for metrics without their own (default: the pool's)."""
    progress_every: int = 25
    """Log progress after this many finished evaluations."""
    chunk_size: int | None = None
    """Evaluations per scoring step (default: $N8N_DEEPEVAL_CHUNK_SIZE, else 1000)."""
    max_error_rate: float | None = None
    """``run --max-error-rate``: the error_rate check holds the scores to it, as the
    version's outcome does (default: checks.maxErrorRate, and any judge outage)."""


class PlanConfig(dg.Config):
    """The planning step's part of ``MetricScoresConfig``."""

    chunk_size: int | None = None


class ChunkConfig(dg.Config):
    """A chunk step's part of ``MetricScoresConfig``."""

    timeout_s: float | None = None
    progress_every: int = 25


class CollectConfig(dg.Config):
    """The collecting step's part of ``MetricScoresConfig``."""

    max_error_rate: float | None = None


def chunk_size(configured: int | None) -> int:
    """The run's chunk size: its config, else ``$N8N_DEEPEVAL_CHUNK_SIZE``, else the default."""
    if configured is not None:
        return configured
    value = environment_variables.setting(CHUNK_SIZE_ENV).strip()
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{CHUNK_SIZE_ENV}={value!r} is not a whole number") from None


def _key(benchmark: Benchmark) -> dg.AssetKey:
    return dg.AssetKey([benchmark.name, "metric_scores"])


def build_metric_scores_asset(
    benchmark: Benchmark, common: dict[str, Any], ins: dict[str, dg.AssetIn]
) -> dg.AssetsDefinition:
    """The graph-backed ``metric_scores`` asset of a benchmark (same key, table and checks).

    With a head-to-head metric, ``ins`` give every version's outputs and snapshots (its
    opponents' are among them); the plan keeps this partition's own.
    """
    specs = score_check_specs(benchmark)
    head_to_head = any(entry_for(config).head_to_head for config in benchmark.metrics)
    # Op names are global in a code location: one set per benchmark.
    prefix = f"{benchmark.name}__"

    def build_plan(
        judge: JudgeResource,
        partition: str,
        frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame],
        timeout_s: float,
        only: range | None,
    ) -> EvaluationPlan:
        expanded_runs, dataset_rows, agent_outputs, workflow_snapshot, output_images = frames
        # With a head-to-head metric, the outputs and snapshots are every version's.
        outputs = from_frame(AgentOutput, agent_outputs)
        snapshots = from_frame(WorkflowSnapshot, workflow_snapshot)
        family = family_of(partition, snapshots, outputs) if head_to_head else None
        return EvaluationPlan(
            benchmark,
            from_frame(ExpandedRun, expanded_runs),
            from_frame(DatasetRow, dataset_rows),
            of_version(outputs, partition),
            judge.spec_for,  # each metric's judge, else the benchmark's, else the default
            timeout_s,
            judge.prices(),
            only=only,
            tools=snapshot_tools(of_version(snapshots, partition)),
            family=family,
            images=from_frame(OutputImage, output_images),
        )

    @dg.op(
        name=f"{prefix}plan",
        description="List the evaluations and split them into chunks of chunk_size.",
        out={
            "known": dg.Out(io_manager_key=STEP_IO_MANAGER),
            "chunks": dg.DynamicOut(io_manager_key=STEP_IO_MANAGER),
        },
    )
    def plan(
        context: dg.OpExecutionContext,
        config: PlanConfig,
        judge: JudgeResource,
        expanded_runs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
        agent_outputs: pd.DataFrame,
        workflow_snapshot: pd.DataFrame,
        output_images: pd.DataFrame,
    ) -> Iterator[dg.Output[Any] | dg.DynamicOutput[Any]]:
        frames = (expanded_runs, dataset_rows, agent_outputs, workflow_snapshot, output_images)
        # counts only: no task is kept
        planned = build_plan(judge, context.partition_key, frames, 1.0, range(0))
        judge.shared_state().reset_breaker()  # an earlier run's open circuit is history
        if any(spec.is_dry_run for spec in planned.judges):
            context.log.warning("dry-run judge: judge-backed scores are placeholders")
        size = chunk_size(config.chunk_size)
        chunks = plan_chunks(planned.task_count, size)
        context.log.info(
            f"{planned.task_count} evaluations in {len(chunks)} chunk(s) of at most "
            f"{size}; {planned.total - planned.task_count} rows "
            "known without evaluating"
        )
        yield dg.Output(
            KnownScores(planned.rows_without_output(), planned.total),
            output_name="known",
            metadata={"evaluations": planned.task_count, "chunks": len(chunks)},
        )
        for chunk in chunks:
            yield dg.DynamicOutput(chunk, output_name="chunks", mapping_key=chunk.chunk_id)

    @dg.op(
        name=f"{prefix}score",
        description="Score one chunk of the evaluations in this step's worker pool.",
        out=dg.Out(io_manager_key=STEP_IO_MANAGER),
    )
    def score(
        context: dg.OpExecutionContext,
        config: ChunkConfig,
        worker_pool: WorkerPoolResource,
        judge: JudgeResource,
        score_journal: ScoreJournalResource,
        chunk: ScoreChunk,
        expanded_runs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
        agent_outputs: pd.DataFrame,
        workflow_snapshot: pd.DataFrame,
        output_images: pd.DataFrame,
    ) -> Iterator[dg.Output[ChunkScores]]:
        frames = (expanded_runs, dataset_rows, agent_outputs, workflow_snapshot, output_images)
        timeout_s = config.timeout_s or worker_pool.timeout_s
        only = range(chunk.start, chunk.stop)
        planned = build_plan(judge, context.partition_key, frames, timeout_s, only)
        if planned.task_count != chunk.plan_tasks:
            raise dg.Failure(
                f"chunk {chunk.chunk_id}: the partition now has {planned.task_count} "
                f"evaluations, the plan had {chunk.plan_tasks} (its upstream tables were "
                "re-materialised since): materialise metric_scores again"
            )
        with score_journal.journal(
            benchmark.name, context.partition_key, chunk.chunk_id
        ) as journal:
            yield from _score_chunk(context, config, worker_pool, judge, journal, chunk, planned)

    check_outs = {
        spec.get_python_identifier(): dg.Out(dg.Nothing, is_required=False) for spec in specs
    }

    @dg.op(
        name=f"{prefix}collect",
        description="Store every chunk's rows as the metric_scores table, with its checks.",
        out={"result": dg.Out(), **check_outs},
    )
    def collect(
        context: dg.OpExecutionContext,
        config: CollectConfig,
        score_journal: ScoreJournalResource,
        judge: JudgeResource,
        known: KnownScores,
        chunks: list[ChunkScores],
    ) -> Iterator[dg.Output[pd.DataFrame] | dg.AssetCheckResult]:
        ordered = sorted(chunks, key=lambda chunk: chunk.chunk_id)
        scores = [row for chunk in ordered for row in chunk.rows] + known.rows
        partition = context.partition_key
        users = score_journal.journal(benchmark.name, partition, SIMULATION_LEDGER)
        simulated = with_answered_calls({}, users.answered_calls(), judge.prices())
        spend = merged([*(chunk.spend for chunk in ordered), simulated])
        metadata = {
            **summary_metadata(scores),
            **_pool_metadata(ordered),
            "evaluated": sum(chunk.evaluated for chunk in ordered),
            "resumed": sum(chunk.resumed for chunk in ordered),
            "chunks": len(ordered),
            **attempts_metadata(context.run_id, spend),
        }
        yield dg.Output(to_frame(MetricScore, scores), output_name="result", metadata=metadata)
        # A run of this version still going charges its own calls when it stores its table.
        running = unfinished_runs(context.instance) - {context.run_id}
        score_journal.clear_partition(benchmark.name, partition, running)
        limits = Limits.of(benchmark.checks.max_error_rate, config.max_error_rate)
        yield from score_checks(benchmark, scores, known.expected, limits)

    @dg.graph_asset(
        name="metric_scores",
        description="One score per run and metric, computed in the worker pool, a step per "
        "chunk of evaluations.",
        ins=ins,
        check_specs=specs,
        config=dg.ConfigMapping(
            config_fn=_op_config, config_schema=MetricScoresConfig.to_config_schema()
        ),
        **common,
    )
    def metric_scores(
        expanded_runs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
        agent_outputs: pd.DataFrame,
        workflow_snapshot: pd.DataFrame,
        output_images: pd.DataFrame,
    ) -> Any:
        # Short node names: steps are <benchmark>__metric_scores.plan, .score[c01_of_02], …
        frames = (expanded_runs, dataset_rows, agent_outputs, workflow_snapshot, output_images)
        known, chunks = plan.alias("plan")(*frames)
        scored = chunks.map(lambda chunk: score.alias("score")(chunk, *frames))
        outputs = collect.alias("collect")(known, scored.collect())
        return {"result": outputs.result, **{name: getattr(outputs, name) for name in check_outs}}

    asset: dg.AssetsDefinition = metric_scores
    return asset


def _score_chunk(
    context: dg.OpExecutionContext,
    config: ChunkConfig,
    worker_pool: WorkerPoolResource,
    judge: JudgeResource,
    journal: ScoreJournal,
    chunk: ScoreChunk,
    planned: EvaluationPlan,
) -> Iterator[dg.Output[ChunkScores]]:
    """Score a chunk's evaluations the journal has no result of; its rows and spend."""
    scores, to_run = planned.resume(journal.completed())
    # This run's evaluations journaled before now: an execution of this step lost with its
    # machine, re-delivered to this one in the same run.
    earlier = sum(entry[0] == context.run_id for entry in journal.attempts())
    ledger = journal.ledger_tag(context.run_id)
    # A trace is exported: each judge call's timing is kept for it (else nothing is).
    kept = {"ledger": ledger, "keep_judge_calls": traces_wanted()}
    to_run = [task.model_copy(update=kept) for task in to_run]
    resumed = len(scores)
    if scores:
        say_progress(context, f"resuming: {resumed} rows kept from an interrupted attempt")
    context.log.info(
        f"chunk {chunk.chunk_id}: scoring {len(to_run)} evaluations on {worker_pool.size} workers"
    )
    tasks = {task.task_id: task for task in to_run}
    for result in worker_pool.evaluate(to_run):
        journal.record(tasks[result.task_id], result, context.run_id)
        scores.append(planned.row_for(result))
        if len(scores) % config.progress_every == 0 or len(scores) == chunk.size:
            pacing = _pacing_line(judge, planned)
            say_progress(
                context, f"chunk {chunk.chunk_id}: scored {len(scores)}/{chunk.size}{pacing}"
            )
    pool = {k: v for k, v in worker_pool.pool.stats().items() if v is not None}
    pool[_POOL_PROCESS] = os.getpid()  # chunks run by one process share its pool
    # This execution's spend from its own results, the rest from the journal: another run
    # of the version beside it shares the journal, and may clear it.
    entries = journal.attempts()
    own = [entry for entry in entries if entry[0] == context.run_id]
    others = [entry for entry in entries if entry[0] != context.run_id] + own[:earlier]
    spend = merged(
        [planned.spend_of(others), spend_by_run((context.run_id, row) for row in scores[resumed:])]
    )
    # calls are charged as the judge answered them: a killed attempt's too, a lost machine's
    spend = with_answered_calls(spend, journal.answered_calls(), planned.prices)
    yield dg.Output(
        ChunkScores(chunk.chunk_id, scores, len(to_run), resumed, pool, spend),
        metadata=shown(
            {
                "rows": len(scores),
                "evaluated": len(to_run),
                "resumed": resumed,
                # this step's process (its workers: pool/peak_rss_mb_per_worker)
                "step_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                **{f"pool/{key}": value for key, value in pool.items()},
                **_pacing_metadata(judge, planned),
            }
        ),
    )


def _pacing(judge: JudgeResource, planned: EvaluationPlan) -> dict[str, dict[str, Any]]:
    """Each judge of the plan (by label): its fitted concurrency and reported budget."""
    view = judge.shared_state().pacing_view()
    return {spec.label: view[spec.identity] for spec in planned.judges if spec.identity in view}


def _pacing_line(judge: JudgeResource, planned: EvaluationPlan) -> str:
    parts = [
        f"{label}: up to {p['concurrency']} calls in flight"
        + (f", {p['remaining_requests']} requests left" if p["remaining_requests"] else "")
        for label, p in _pacing(judge, planned).items()
    ]
    return f" · {'; '.join(parts)}" if parts else ""


def _pacing_metadata(judge: JudgeResource, planned: EvaluationPlan) -> dict[str, Any]:
    return {
        f"judge/{label}/{name}": value
        for label, pacing in _pacing(judge, planned).items()
        for name, value in pacing.items()
        if value is not None
    }


def _op_config(config: dict[str, Any]) -> dict[str, Any]:
    """``MetricScoresConfig`` (the asset's one config) → its ops' configs."""
    return {
        "plan": {"config": {"chunk_size": config.get("chunk_size")}},
        "score": {
            "config": {
                "timeout_s": config.get("timeout_s"),
                "progress_every": config.get("progress_every", 25),
            }
        },
        "collect": {"config": {"max_error_rate": config.get("max_error_rate")}},
    }


_POOL_PROCESS = "process"


def _pool_metadata(chunks: list[ChunkScores]) -> dict[str, Any]:
    """The pools' figures: totals of sizes and memory, the worst of the rest.

    A pool's figures are counted once however many chunks it scored (its counts are
    running totals: a chunk's are the pool's so far); pools of separate step processes
    add up.
    """
    pools: dict[object, dict[str, Any]] = {}
    for chunk in chunks:
        owner = chunk.pool.get(_POOL_PROCESS)
        latest = pools.setdefault(owner, {})
        for key, value in chunk.pool.items():
            if key != _POOL_PROCESS:
                latest[key] = max(latest.get(key, value), value)
    stats = [entry for entry in pools.values() if entry]
    if not stats:
        return {}
    summed = ("workers", "replacements", "rss_mb_total")
    worst = ("warmup_s", "peak_rss_mb_per_worker")
    merged: dict[str, Any] = {}
    for key in {key for entry in stats for key in entry}:
        values = [entry[key] for entry in stats if key in entry]
        if key in summed:
            merged[key] = sum(values)
        elif key in worst:
            merged[key] = max(values)
        else:
            merged[key] = statistics.median(values)
    return shown({f"pool/{key}": merged[key] for key in sorted(merged)})


def attempts_metadata(run_id: str, spend: dict[str, JudgeSpend]) -> dict[str, Any]:
    """The judge's spend of every attempt at these scores, and of this run alone.

    ``judge_calls`` counts the calls behind the stored rows; an attempt that was
    interrupted, or whose evaluations were scored again, spent more, and the attempts'
    calls include their simulated users'.
    """
    everything = sum(spend.values(), JudgeSpend())
    own = spend.get(run_id, JudgeSpend())
    return shown(
        {
            ATTEMPTS_METADATA: dg.MetadataValue.json(
                {run: part.model_dump() for run, part in spend.items()}
            ),
            "attempts/count": dg.MetadataValue.int(len(spend)),
            "attempts/judge_calls": dg.MetadataValue.int(everything.judge_calls),
            "attempts/cost_usd": dg.MetadataValue.float(everything.cost_usd or 0.0),
            "run/judge_calls": dg.MetadataValue.int(own.judge_calls),
            "run/cost_usd": dg.MetadataValue.float(own.cost_usd or 0.0),
        }
    )


def summary_metadata(scores: list[MetricScore]) -> dict[str, Any]:
    """Figures the UI charts across materialisations."""
    metadata: dict[str, Any] = {
        "rows": dg.MetadataValue.int(len(scores)),
        "score_pass_rate": dg.MetadataValue.float(
            fmean(s.success for s in scores) if scores else 0.0
        ),
        "errors": dg.MetadataValue.int(sum(1 for s in scores if s.error_kind)),
        "judge_calls": dg.MetadataValue.int(sum(s.judge_calls for s in scores)),
        "judge_retries": dg.MetadataValue.int(sum(s.judge_retries for s in scores)),
        "cached_calls": dg.MetadataValue.int(sum(s.cached_calls for s in scores)),
        "dry_run_judge": dg.MetadataValue.bool(any(s.dry_run for s in scores)),
    }
    judged = [s for s in scores if not s.dry_run]
    if judged:  # the dry-run judge spends no tokens: a flat 0 would chart nothing true
        metadata["tokens"] = dg.MetadataValue.int(sum(s.tokens for s in judged))
    costs = [s.cost_usd for s in judged if s.cost_usd is not None]
    if costs:  # unpriced (a dry run, a model without a price): no cost, as the report's "—"
        metadata["cost_usd"] = dg.MetadataValue.float(sum(costs))
    for metric in sorted({s.metric for s in scores}):
        values = [s.score for s in scores if s.metric == metric and s.score is not None]
        if values:
            metadata[f"mean_score/{metric}"] = dg.MetadataValue.float(fmean(values))
        agreement = mean_of_present([s.judge_agreement for s in scores if s.metric == metric])
        if agreement is not None:  # a judge panel scored it
            metadata[f"judge_agreement/{metric}"] = dg.MetadataValue.float(agreement)
    judges = judge_usage(scores)
    for usage in judges if len(judges) > 1 else []:
        if usage.cost_usd is not None:
            metadata[f"cost_usd/{usage.judge}"] = dg.MetadataValue.float(usage.cost_usd)
    return shown(metadata)


def score_check_specs(benchmark: Benchmark) -> list[dg.AssetCheckSpec]:
    """The checks of ``metric_scores``, evaluated by its collecting step."""
    asset = _key(benchmark)
    limit = benchmark.checks.max_error_rate
    return [
        version_check(
            "every_run_scored",
            benchmark,
            asset,
            description="Every run has a row for every metric.",
        ),
        version_check(
            "error_rate",
            benchmark,
            asset,
            description=f"The scores are complete as `run` holds them (it exits 3 otherwise): "
            f"at most {limit:.0%} of the workflow calls failed, at most {limit:.0%} of the "
            "scores have no judgement (judge or worker errors; checks.maxErrorRate, or "
            "`run --max-error-rate`), and the judge never stopped answering (unless "
            "`--max-error-rate` allows a share).",
        ),
        version_check(
            "no_metric_errors",
            benchmark,
            asset,
            description="No score row carries an error of any kind (missing input included).",
        ),
    ]


def score_checks(
    benchmark: Benchmark, scores: list[MetricScore], expected: int, limits: Limits
) -> list[dg.AssetCheckResult]:
    """Results of the checks of ``metric_scores``.

    ``error_rate`` fails when, and only when, the version's outcome is incomplete for its
    scores (``run`` exits 3): the outcome's own rule, held to the same ``limits``.
    """
    errors = error_summary(scores)
    incomplete = incompleteness(errors, None, limits)
    key = _key(benchmark)
    return [
        dg.AssetCheckResult(
            check_name="error_rate",
            asset_key=key,
            passed=incomplete is None,
            metadata=shown(
                {
                    "unjudged": errors.unjudged,
                    "unjudged_rate": errors.unjudged_rate,
                    "judge_outage": errors.judge_outage,
                    "failed_target_calls": errors.failed_target_calls,
                    "failed_target_call_rate": errors.failed_target_call_rate,
                    "max_error_rate": limits.max_error_rate,
                    "incomplete": "no" if incomplete is None else incomplete.text,
                }
            ),
        ),
        dg.AssetCheckResult(
            check_name="every_run_scored",
            asset_key=key,
            passed=len(scores) == expected,
            metadata={"rows": len(scores), "expected": expected},
        ),
        dg.AssetCheckResult(
            check_name="no_metric_errors",
            asset_key=key,
            passed=not errors.by_kind,
            severity=dg.AssetCheckSeverity.WARN,
            metadata=dict(errors.by_kind),
        ),
    ]
