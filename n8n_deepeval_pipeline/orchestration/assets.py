"""The Dagster assets of one benchmark, partitioned by workflow hash.

Each asset reads as "load rows → step → store rows": the upstream tables of the
partition arrive as DataFrames and become row models (``tables.frames``), one step of
``tables.steps`` makes the asset's rows, and the DuckDB IO manager stores them as
``<benchmark>.<asset>``, replacing the partition's rows on every materialisation.
``version_comparison`` and ``benchmark_report`` read every version's rows (a partition is
compared with an earlier one); the report is files, not a table. ``metric_scores`` is a
graph of steps, a step per chunk of evaluations (``chunked_scoring``).
"""

# No postponed annotations: Dagster inspects the annotations of asset functions.
from collections.abc import Iterator
from pathlib import Path
from statistics import fmean
from typing import Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark, RecordedTarget
from n8n_deepeval_pipeline.benchmark.n8n_target import DataTableOutput
from n8n_deepeval_pipeline.calibration.measurement import measure
from n8n_deepeval_pipeline.calibration.status import gated_metrics
from n8n_deepeval_pipeline.config.errors import pointed_to_by
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.n8n_api.data_table_sink import (
    AGGREGATE_KEYS,
    CONSISTENCY_KEYS,
    write_rows,
)
from n8n_deepeval_pipeline.orchestration.calibration_gate import (
    calibration_metadata,
    not_deciding,
    step_calibration,
)
from n8n_deepeval_pipeline.orchestration.chunked_scoring import build_metric_scores_asset
from n8n_deepeval_pipeline.orchestration.live_target import live_outputs, outputs_metadata
from n8n_deepeval_pipeline.orchestration.metadata_figures import shown
from n8n_deepeval_pipeline.orchestration.partitions import partitions_for, version_check
from n8n_deepeval_pipeline.orchestration.red_team import (
    build_red_team_assets,
    red_teamed_versions,
)
from n8n_deepeval_pipeline.orchestration.resources.human_labels import HumanLabelsResource
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.score_journal import ScoreJournalResource
from n8n_deepeval_pipeline.orchestration.run_traces import (
    TRACE_INPUTS,
    build_run_trace_asset,
    traces_wanted,
)
from n8n_deepeval_pipeline.orchestration.workflow_checks import build_workflow_checks_asset
from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
from n8n_deepeval_pipeline.report import (
    Report,
    ReportOnlyTables,
    pr_comment,
    version_report,
    write_report,
)
from n8n_deepeval_pipeline.report.red_team import RedTeamRows
from n8n_deepeval_pipeline.statistics.aggregate import mean_of_present
from n8n_deepeval_pipeline.statistics.version_comparison import (
    VersionComparison,
    cases_failing_gate,
)
from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.comparison import (
    StoredVersions,
    baseline_version,
    variant_bases,
    verdict_rows,
)
from n8n_deepeval_pipeline.tables.frames import from_frame, to_frame
from n8n_deepeval_pipeline.tables.output_images import with_images
from n8n_deepeval_pipeline.tables.row_selection import RowSelection
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    CaseVerdict,
    ConsistencyStats,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    OutputImage,
    Row,
    RunAggregate,
    TableRow,
    WorkflowCheck,
    WorkflowSnapshot,
    of_version,
)
from n8n_deepeval_pipeline.workflow.hashing import VERSION_KEY_LENGTH, version_key
from n8n_deepeval_pipeline.workflow.variants import BASE

ASSET_NAMES = (
    "workflow_snapshot",
    "workflow_checks",
    "dataset_rows",
    "expanded_runs",
    "agent_outputs",
    "output_images",
    "metric_scores",
    "run_aggregates",
    "consistency_stats",
    "version_comparison",
    "benchmark_report",
)
# Tables keep the full hash; a partition's rows are those whose hash starts with its key.
_PARTITION_METADATA = {"partition_expr": f"left(workflow_hash, {VERSION_KEY_LENGTH})"}


def _key(benchmark: Benchmark, asset: str) -> dg.AssetKey:
    return dg.AssetKey([benchmark.name, asset])


def _ins(benchmark: Benchmark, *names: str) -> dict[str, dg.AssetIn]:
    return {name: dg.AssetIn(key=_key(benchmark, name)) for name in names}


def build_benchmark_assets(
    benchmark: Benchmark, source: Path, selection: RowSelection | None = None
) -> tuple[list[dg.AssetsDefinition], dg.DynamicPartitionsDefinition]:
    """The assets of a benchmark (the sink's too, if it has one) and their partitions.

    ``selection``: a trial of a few rows (``run --filter``), stored apart by the caller.
    """
    partitions = partitions_for(benchmark)
    common: dict[str, Any] = {
        "key_prefix": [benchmark.name],
        "group_name": benchmark.name,
        "partitions_def": partitions,
        "metadata": _PARTITION_METADATA,
    }

    @dg.asset(
        name="workflow_snapshot", description="The workflow version of this partition.", **common
    )
    def workflow_snapshot(context: dg.AssetExecutionContext, n8n: N8nResource) -> pd.DataFrame:
        workflow, source = n8n.workflow(benchmark)
        rows = steps.workflow_snapshot(workflow, source, context.partition_key, benchmark.variants)
        context.add_output_metadata(
            {
                "node_count": rows[0].node_count,
                "name": rows[0].name or "",
                "variant": rows[0].variant or BASE,
            }
        )
        return to_frame(WorkflowSnapshot, rows)

    @dg.asset(
        name="dataset_rows",
        description="Dataset rows after filters and cap.",
        ins=_ins(benchmark, "workflow_snapshot"),  # for the version's full hash
        **common,
    )
    def dataset_rows(
        context: dg.AssetExecutionContext, n8n: N8nResource, workflow_snapshot: pd.DataFrame
    ) -> pd.DataFrame:
        (snapshot,) = from_frame(WorkflowSnapshot, workflow_snapshot)
        dataset = benchmark.runs_dataset
        records = n8n.dataset_records(dataset)
        with pointed_to_by(source):
            rows = steps.dataset_rows(
                dataset,
                snapshot.workflow_hash,
                records,
                conversational=benchmark.simulation is not None,
            )
        if selection is not None:
            rows = selection.apply(rows)
            context.log.info(f"trial of {len(rows)} rows: {selection.describe()}")
        context.add_output_metadata({"rows": len(rows), "source": dataset.source})
        return to_frame(DatasetRow, rows)

    @dg.asset(
        name="expanded_runs",
        description="Dataset rows × runsPerRow with the seed's case and run ids.",
        ins=_ins(benchmark, "dataset_rows"),
        **common,
    )
    def expanded_runs(
        context: dg.AssetExecutionContext, dataset_rows: pd.DataFrame
    ) -> pd.DataFrame:
        runs = steps.expanded_runs(
            from_frame(DatasetRow, dataset_rows),
            benchmark.runs_per_row,
            benchmark.run_name or benchmark.name,
        )
        context.add_output_metadata({"runs": len(runs)})
        return to_frame(ExpandedRun, runs)

    def _out(description: str) -> dg.AssetOut:
        return dg.AssetOut(
            key_prefix=[benchmark.name],
            group_name=benchmark.name,
            description=description,
            metadata=_PARTITION_METADATA,
        )

    @dg.multi_asset(
        name=f"{benchmark.name}__agent_outputs",
        outs={
            "agent_outputs": _out("What the workflow produced for each run."),
            "output_images": _out(
                "The images of the runs' outputs and inputs, once each, by content hash."
            ),
        },
        ins=_ins(benchmark, "expanded_runs", "dataset_rows"),
        # After the snapshot: outputs belong to the version it checked, nothing is read from it.
        deps=[_key(benchmark, "workflow_snapshot")],
        partitions_def=partitions,
    )
    def agent_outputs(
        context: dg.AssetExecutionContext,
        n8n: N8nResource,
        judge: JudgeResource,
        score_journal: ScoreJournalResource,
        expanded_runs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
    ) -> Any:
        runs = from_frame(ExpandedRun, expanded_runs)
        rows = from_frame(DatasetRow, dataset_rows)
        with pointed_to_by(source):
            if isinstance(benchmark.target, RecordedTarget):
                outputs = steps.agent_outputs(benchmark.target, runs, rows, benchmark.runs_per_row)
            else:
                outputs = live_outputs(context, benchmark, n8n, judge, score_journal, runs, rows)
            outputs, images = with_images(outputs, runs, rows, _dataset_folder(benchmark))
        yield dg.Output(
            to_frame(AgentOutput, outputs),
            output_name="agent_outputs",
            metadata=shown(outputs_metadata(outputs)),
        )
        yield dg.Output(
            to_frame(OutputImage, images),
            output_name="output_images",
            metadata={"images": len(images)},
        )

    @dg.asset(
        name="run_aggregates",
        description="Overall score and success per run under the pass rule.",
        ins=_ins(benchmark, "expanded_runs", "metric_scores"),
        **common,
    )
    def run_aggregates(
        context: dg.AssetExecutionContext,
        human_labels: HumanLabelsResource,
        expanded_runs: pd.DataFrame,
        metric_scores: pd.DataFrame,
    ) -> pd.DataFrame:
        calibration = step_calibration(benchmark, human_labels)
        rows = steps.run_aggregates(
            benchmark,
            from_frame(ExpandedRun, expanded_runs),
            from_frame(MetricScore, metric_scores),
            not_deciding(calibration),
        )
        passed = [row.overall_success for row in rows]
        rate = fmean(passed) if passed else 0.0
        context.add_output_metadata(shown({"runs": len(rows), "run_pass_rate": rate}))
        if calibration is not None:
            context.add_output_metadata(calibration_metadata(calibration.standings, benchmark.name))
        return to_frame(RunAggregate, rows)

    @dg.asset(
        name="consistency_stats",
        description="Per-case consistency of repeated runs, pass@k and pass^k.",
        ins=_ins(
            benchmark,
            "expanded_runs",
            "run_aggregates",
            "metric_scores",
            "agent_outputs",
            "dataset_rows",
        ),
        **common,
    )
    def consistency_stats(
        context: dg.AssetExecutionContext,
        expanded_runs: pd.DataFrame,
        run_aggregates: pd.DataFrame,
        metric_scores: pd.DataFrame,
        agent_outputs: pd.DataFrame,
        dataset_rows: pd.DataFrame,
    ) -> pd.DataFrame:
        rows = steps.consistency_stats(
            benchmark,
            from_frame(ExpandedRun, expanded_runs),
            from_frame(RunAggregate, run_aggregates),
            from_frame(MetricScore, metric_scores),
            from_frame(AgentOutput, agent_outputs),
            from_frame(DatasetRow, dataset_rows),
        )
        context.add_output_metadata(_consistency_metadata(rows))
        return to_frame(ConsistencyStats, rows)

    red_team = build_red_team_assets(benchmark, common) if benchmark.red_team else []
    checks = build_workflow_checks_asset(benchmark, common)
    if benchmark.red_team_only:  # the red team sends its own messages: no rows, no scores
        return [*red_team, workflow_snapshot, checks, _benchmark_report(benchmark, common)], (
            partitions
        )
    assets = [
        *red_team,
        workflow_snapshot,
        checks,
        dataset_rows,
        expanded_runs,
        agent_outputs,
        build_metric_scores_asset(benchmark, common, _scoring_ins(benchmark)),
        run_aggregates,
        consistency_stats,
        _version_comparison(benchmark, common),
        _benchmark_report(benchmark, common),
    ]
    if benchmark.sink is not None:
        assets.append(_data_table_sink(benchmark, common))
    if traces_wanted():
        assets.append(build_run_trace_asset(benchmark, common, _ins(benchmark, *TRACE_INPUTS)))
    return assets, partitions


# A sink table: where it goes, the asset it comes from, its rows' model, them, its keys.
_SinkTable = tuple[DataTableOutput | None, str, type[TableRow], pd.DataFrame, tuple[str, ...]]


def _dataset_folder(benchmark: Benchmark) -> Path | None:
    """Where a dataset file's rows name their input image files from."""
    path = benchmark.dataset.path if benchmark.dataset is not None else None
    return None if path is None else Path(path).parent


def _data_table_sink(benchmark: Benchmark, common: dict[str, Any]) -> dg.AssetsDefinition:
    """Results written back to n8n Data Tables; a failure here loses nothing in DuckDB."""
    sink = benchmark.sink
    assert sink is not None

    @dg.asset(
        name="data_table_sink",
        description="Run aggregates and consistency stats written to n8n Data Tables.",
        ins=_ins(benchmark, "run_aggregates", "consistency_stats"),
        **{**common, "metadata": {}},
    )
    def data_table_sink(
        context: dg.AssetExecutionContext,
        n8n: N8nResource,
        run_aggregates: pd.DataFrame,
        consistency_stats: pd.DataFrame,
    ) -> dg.MaterializeResult:
        tables: list[_SinkTable] = [
            (sink.run_aggregates, "run_aggregates", RunAggregate, run_aggregates, AGGREGATE_KEYS),
            (
                sink.consistency_stats,
                "consistency_stats",
                ConsistencyStats,
                consistency_stats,
                CONSISTENCY_KEYS,
            ),
        ]
        written: dict[str, Any] = {}
        with n8n.client() as client:
            for output, name, model, frame, keys in tables:
                if output is None:
                    continue
                done = write_rows(client, output, from_frame(model, frame), keys, model)
                written[f"{name}_rows_written"] = done.written
                written[f"{name}_rows_already_there"] = done.already_there
                context.log.info(
                    f"{output.data_table}: {done.written} rows written, "
                    f"{done.already_there} already there"
                )
        return dg.MaterializeResult(metadata=written)

    sink_asset: dg.AssetsDefinition = data_table_sink
    return sink_asset


def _scoring_ins(benchmark: Benchmark) -> dict[str, dg.AssetIn]:
    """What metric_scores reads: this version's runs, outputs, images and snapshot.

    Every version's outputs and snapshots when a head-to-head metric sets this version's
    runs beside another's.
    """
    if any(entry_for(config).head_to_head for config in benchmark.metrics):
        return {
            **_ins(benchmark, "expanded_runs", "dataset_rows"),
            **_every_version(benchmark, "agent_outputs", "workflow_snapshot", "output_images"),
        }
    return _ins(
        benchmark,
        "expanded_runs",
        "dataset_rows",
        "agent_outputs",
        "workflow_snapshot",
        "output_images",
    )


def _every_version(benchmark: Benchmark, *names: str) -> dict[str, dg.AssetIn]:
    """Inputs holding every version's rows (the comparison reads two of them)."""
    return {
        name: dg.AssetIn(key=_key(benchmark, name), partition_mapping=dg.AllPartitionMapping())
        for name in names
    }


def _version_comparison(benchmark: Benchmark, common: dict[str, Any]) -> dg.AssetsDefinition:
    """Each case of this version against the baseline version, with the verdicts."""
    key = _key(benchmark, "version_comparison")
    gate = benchmark.compare.fail_on

    @dg.asset(
        name="version_comparison",
        description="Each case against the baseline version (the one registered before, or "
        "compare.baseline): pass counts, Fisher's exact test, and a verdict.",
        ins=_every_version(
            benchmark, "expanded_runs", "run_aggregates", "metric_scores", "workflow_snapshot"
        ),
        check_specs=[
            version_check(
                "no_regression",
                benchmark,
                key,
                blocking=benchmark.compare.blocking,
                description=f"No case has the verdict {gate!r} (or worse) against the "
                "baseline version.",
            )
        ],
        **common,
    )
    def version_comparison(
        context: dg.AssetExecutionContext,
        human_labels: HumanLabelsResource,
        expanded_runs: pd.DataFrame,
        run_aggregates: pd.DataFrame,
        metric_scores: pd.DataFrame,
        workflow_snapshot: pd.DataFrame,
    ) -> Any:
        candidate = context.partition_key
        # Only what the gate keeps from deciding: without the gate no label is read.
        gated = gated_metrics(benchmark, human_labels.store(benchmark).judged)
        stored = _stored_versions(expanded_runs, run_aggregates, metric_scores, gated)
        baseline = _baseline(context, benchmark, from_frame(WorkflowSnapshot, workflow_snapshot))
        if baseline is None:
            context.log.info("no earlier version to compare with")
            yield dg.Output(to_frame(CaseVerdict, []), metadata={"baseline": "none"})
            yield dg.AssetCheckResult(check_name="no_regression", passed=True, asset_key=key)
            return
        comparison = stored.compare(baseline, candidate)
        flagged = cases_failing_gate(comparison, gate)
        verdicts = verdict_rows(comparison, stored.full_hash(baseline), stored.full_hash(candidate))
        yield dg.Output(
            to_frame(CaseVerdict, verdicts),
            metadata=_comparison_metadata(comparison, baseline),
        )
        yield dg.AssetCheckResult(
            check_name="no_regression",
            asset_key=key,
            passed=not flagged,
            metadata={"baseline": baseline[:12], "flagged_cases": ", ".join(flagged) or "none"},
        )

    comparison_asset: dg.AssetsDefinition = version_comparison
    return comparison_asset


class OutcomeLimitsConfig(dg.Config):
    """What the version is held to, besides the benchmark's checks (``run``'s options)."""

    max_error_rate: float | None = None
    """The share of failed workflow calls, unjudged scores or errored attacks above which the
    version is incomplete (default: checks.maxErrorRate, and any judge outage)."""
    fail_under: float | None = None
    """The pass rate below which the version fails (``run --fail-under``)."""


VERSION_PASSES = "version_passes"
# The report asset's metadata entry naming the report.html it wrote (`run` prints it).
REPORT_METADATA = "report"
# Run tags the runs list shows: the version's verdict and what `run` exits with for it.
VERDICT_TAG = "n8n-deepeval/verdict"
EXIT_CODE_TAG = "n8n-deepeval/exit_code"


def _benchmark_report(benchmark: Benchmark, common: dict[str, Any]) -> dg.AssetsDefinition:
    """The version's HTML report, eval-results.json and PR comment, and its outcome.

    The outcome is the version's verdict, as ``run`` exits on it: the ``version_passes``
    check fails when ``run`` would exit other than 0, and is blocking, so that such a run
    is a failure in the runs list rather than a green success (its step fails after the
    report is written); the run's tags name the verdict and the exit code beside it.
    """
    key = _key(benchmark, "benchmark_report")

    @dg.asset(
        name="benchmark_report",
        description="This version's report (report.html, eval-results.json, "
        "eval-pr-comment.md): headline, comparison with the baseline, metrics, every case"
        + (", the red team" if benchmark.red_team else "")
        + "; and its outcome, the verdict `run` exits on.",
        ins=_report_ins(benchmark),
        check_specs=[
            version_check(
                VERSION_PASSES,
                benchmark,
                key,
                blocking=True,
                description="The version passes: not incomplete, no case failing "
                "compare.failOn, no red-team breach over redTeam.failOn or more than before "
                "(a variant's verdicts against the workflow fail nothing); failed, the run "
                "is a failure and its tags say why.",
            )
        ],
        **{**common, "metadata": {}},
    )
    def benchmark_report(
        context: dg.AssetExecutionContext,
        config: OutcomeLimitsConfig,
        human_labels: HumanLabelsResource,
        **tables: pd.DataFrame,
    ) -> Iterator[Any]:
        snapshots = from_frame(WorkflowSnapshot, tables["workflow_snapshot"])
        own = ReportOnlyTables(
            outputs=_rows_of(tables, "agent_outputs", AgentOutput),
            consistency=_rows_of(tables, "consistency_stats", ConsistencyStats),
            dataset=_rows_of(tables, "dataset_rows", DatasetRow),
            snapshots=snapshots,
            checks=_rows_of(tables, "workflow_checks", WorkflowCheck),
            images=_rows_of(tables, "output_images", OutputImage),
        )
        labels = human_labels.store(benchmark).judged()
        calibration = measure(benchmark, labels) if labels or benchmark.calibration else None
        stored = StoredVersions(
            _rows_of(tables, "expanded_runs", ExpandedRun),
            _rows_of(tables, "run_aggregates", RunAggregate),
            _rows_of(tables, "metric_scores", MetricScore),
            not_deciding(calibration),
        )
        baseline = _baseline(context, benchmark, snapshots)
        limits = Limits.of(
            benchmark.checks.max_error_rate, config.max_error_rate, config.fail_under
        )
        played = _red_team_rows(context, benchmark, tables) if benchmark.red_team else None
        report = version_report(
            benchmark, context.partition_key, baseline, stored, own, played, limits, calibration
        )
        folder = settings.reports_dir() / benchmark.name / context.partition_key
        written = write_report(report, folder)
        context.log.info(f"report written to {written['report.html']}")
        outcome = report.outcome
        context.instance.add_run_tags(
            context.run_id,
            {VERDICT_TAG: outcome.verdict, EXIT_CODE_TAG: str(outcome.exit_codes.run)},
        )
        yield dg.MaterializeResult(metadata=_report_metadata(report, written["report.html"]))
        yield dg.AssetCheckResult(
            check_name=VERSION_PASSES,
            asset_key=key,
            passed=outcome.exit_codes.run == 0,
            metadata=_outcome_metadata(outcome),
        )

    report_asset: dg.AssetsDefinition = benchmark_report
    return report_asset


def _report_ins(benchmark: Benchmark) -> dict[str, dg.AssetIn]:
    """What the report reads, by input name.

    Every version's runs, scores, outputs and snapshots (a flagged case sets the
    baseline's beside its own), this version's consistency and rows, and a red team's
    tables of every version (its section, each breach in the baseline). A red team alone
    has only its snapshots and the red team's tables.
    """
    red_team = (
        _every_version(benchmark, "red_team_results", "red_team_summary")
        if benchmark.red_team
        else {}
    )
    if benchmark.red_team_only:
        return {
            **_every_version(benchmark, "workflow_snapshot"),
            **_ins(benchmark, "workflow_checks"),
            **red_team,
        }
    return {
        **_every_version(
            benchmark,
            "expanded_runs",
            "run_aggregates",
            "metric_scores",
            "agent_outputs",
            "workflow_snapshot",
            "output_images",
        ),
        **_ins(benchmark, "consistency_stats", "dataset_rows", "workflow_checks"),
        **red_team,
    }


def _rows_of(tables: dict[str, pd.DataFrame], name: str, model: type[Row]) -> list[Row]:
    """A table's rows, or none when the benchmark has no such table (a red team alone)."""
    return from_frame(model, tables[name]) if name in tables else []


def _outcome_metadata(outcome: VersionOutcome) -> dict[str, Any]:
    """The check's metadata: the verdict, the exit codes and what the outcome says."""
    said = "\n".join(f"- {finding.text}" for finding in outcome.findings) or "nothing"
    return {
        "verdict": outcome.verdict,
        "run_exit_code": outcome.exit_codes.run,
        "compare_exit_code": outcome.exit_codes.compare,
        "findings": dg.MetadataValue.md(said),
    }


def _red_team_rows(
    context: dg.AssetExecutionContext, benchmark: Benchmark, tables: dict[str, pd.DataFrame]
) -> RedTeamRows | None:
    """The version's red-team rows and the baseline's attacks (None: none were played)."""
    results = from_frame(RedTeamResult, tables["red_team_results"])
    version = context.partition_key
    own = of_version(results, version)
    if not own:
        return None
    rates = of_version(from_frame(BreachRate, tables["red_team_summary"]), version)
    before = baseline_version(
        red_teamed_versions(context.instance, benchmark), version, benchmark.compare.baseline
    )
    return RedTeamRows(rates, own, of_version(results, before) if before else None)


def scored_versions(instance: dg.DagsterInstance, benchmark: Benchmark) -> list[str]:
    """The registered versions (oldest first) whose runs have been scored and aggregated.

    A red team alone has no runs: its versions are those whose attacks were played.
    """
    known = instance.get_dynamic_partitions(partitions_for(benchmark).name or "")
    judged = "red_team_results" if benchmark.red_team_only else "run_aggregates"
    materialised = instance.get_materialized_partitions(_key(benchmark, judged))
    # Versions run before keys were shortened have their materialisations under full hashes.
    scored = {version_key(partition) for partition in materialised}
    return [version for version in known if version in scored]


def _baseline(
    context: dg.AssetExecutionContext, benchmark: Benchmark, snapshots: list[WorkflowSnapshot]
) -> str | None:
    """The version this partition is compared with (a variant's: its base)."""
    versions = scored_versions(context.instance, benchmark)
    return baseline_version(
        versions, context.partition_key, benchmark.compare.baseline, variant_bases(snapshots)
    )


def _stored_versions(
    expanded_runs: pd.DataFrame,
    run_aggregates: pd.DataFrame,
    metric_scores: pd.DataFrame,
    uncalibrated: frozenset[str],
) -> StoredVersions:
    return StoredVersions(
        from_frame(ExpandedRun, expanded_runs),
        from_frame(RunAggregate, run_aggregates),
        from_frame(MetricScore, metric_scores),
        uncalibrated,
    )


def _report_metadata(report: Report, html: Path) -> dict[str, Any]:
    """Where the report is, its PR comment, and the figures charted across versions."""
    headline = report.headline
    metadata: dict[str, Any] = {REPORT_METADATA: dg.MetadataValue.path(str(html))}
    served = settings.report_url(html)
    if served is not None:  # what `n8n-deepeval ui` serves: a browser opens no file:// link
        metadata["report_url"] = dg.MetadataValue.url(served)
    if report.workspace_url is not None:  # every case and run of the version, in the workspace
        metadata["workspace_url"] = dg.MetadataValue.url(report.workspace_url)
    if report.review_url is not None and report.labels_wanted:  # where people label its runs
        metadata["review_url"] = dg.MetadataValue.url(report.review_url)
    metadata["summary"] = dg.MetadataValue.md(pr_comment(report))
    metadata["run_pass_rate"] = dg.MetadataValue.float(headline.pass_rate.rate or 0.0)
    metadata["variant"] = report.variant or BASE
    if headline.cost_usd is not None:  # the report's "—": unpriced is not free
        metadata["cost_usd"] = dg.MetadataValue.float(headline.cost_usd)
    if headline.mean_overall_score is not None:
        metadata["mean_overall_score"] = dg.MetadataValue.float(headline.mean_overall_score)
    return shown(metadata)


def _comparison_metadata(comparison: VersionComparison, baseline: str) -> dict[str, Any]:
    counts = {f"verdicts/{verdict}": n for verdict, n in comparison.verdict_counts.items()}
    metadata: dict[str, Any] = {"baseline": baseline[:12], **counts}
    if comparison.overall_delta is not None:
        metadata["run_pass_rate_delta"] = dg.MetadataValue.float(comparison.overall_delta)
    return shown(metadata)


def _consistency_metadata(rows: list[ConsistencyStats]) -> dict[str, Any]:
    means = {
        "mean_cv": mean_of_present([row.cv for row in rows]),
        "mean_overall_consistency": mean_of_present([row.overall_consistency for row in rows]),
        "mean_case_pass_rate": mean_of_present([row.pass_rate for row in rows]),
    }
    present = {name: value for name, value in means.items() if value is not None}
    return shown({"cases": len(rows), **present})
