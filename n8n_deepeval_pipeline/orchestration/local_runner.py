"""Run benchmarks on the local Dagster instance that the UI and the daemon share."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NamedTuple

import dagster as dg
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.execution.api import execute_run
from dagster._core.execution.execute_in_process import merge_run_tags
from dagster._core.execution.execution_result import ExecutionResult
from dagster_shared.error import SerializableErrorInfo
from filelock import FileLock
from pydantic import TypeAdapter

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.label_store import LabelStore
from n8n_deepeval_pipeline.calibration.measurement import Calibration, measure
from n8n_deepeval_pipeline.calibration.review_items import RunsToReview
from n8n_deepeval_pipeline.calibration.status import gated_metrics
from n8n_deepeval_pipeline.online.scoring import OnlineScore
from n8n_deepeval_pipeline.orchestration.assets import (
    ASSET_NAMES,
    REPORT_METADATA,
    VERSION_PASSES,
    scored_versions,
)
from n8n_deepeval_pipeline.orchestration.automation import current_family, current_hash, job_name
from n8n_deepeval_pipeline.orchestration.chunked_scoring import ATTEMPTS_METADATA
from n8n_deepeval_pipeline.orchestration.code_location import ui_job_origin
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.partitions import partitions_for
from n8n_deepeval_pipeline.orchestration.profiles import instance_yaml, is_generated_instance_yaml
from n8n_deepeval_pipeline.orchestration.progress import progress_on_stderr
from n8n_deepeval_pipeline.orchestration.red_team import RED_TEAM_ASSETS, red_teamed_versions
from n8n_deepeval_pipeline.orchestration.resources.human_labels import HumanLabelsResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import OPEN_DATABASES
from n8n_deepeval_pipeline.orchestration.run_owner import fail_abandoned_runs, owner_tags
from n8n_deepeval_pipeline.orchestration.stored_tables import load_stored
from n8n_deepeval_pipeline.orchestration.version_keys import (
    register_version,
    register_versions,
    shorten_old_keys,
)
from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
from n8n_deepeval_pipeline.report import Report, ReportOnlyTables, version_report
from n8n_deepeval_pipeline.report.build import outcome_from_rows
from n8n_deepeval_pipeline.report.red_team import RedTeamRows
from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome
from n8n_deepeval_pipeline.summary.run_summary import (
    BenchmarkSummary,
    simulation_summary,
    summarise,
)
from n8n_deepeval_pipeline.summary.variant_matrix import VariantMatrix, variant_matrix
from n8n_deepeval_pipeline.tables.comparison import (
    StoredVersions,
    UnknownVersionError,
    baseline_version,
    resolve_version,
    variant_bases,
)
from n8n_deepeval_pipeline.tables.frames import from_frame
from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend
from n8n_deepeval_pipeline.tables.recorded_outputs import recording_lines
from n8n_deepeval_pipeline.tables.row_selection import RowSelection
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    OutputImage,
    Row,
    RunAggregate,
    WorkflowCheck,
    WorkflowSnapshot,
    full_hash,
)
from n8n_deepeval_pipeline.workflow.hashing import version_key
from n8n_deepeval_pipeline.workflow.variants import BASE, Member


def _console_log(level: str) -> dict[str, Any]:
    return {"loggers": {"console": {"config": {"log_level": level}}}}


# A quiet run shows only its steps' progress; the events stay in the instance for the UI.
_QUIET_LOGS = _console_log("CRITICAL")
_VERBOSE_LOGS = _console_log("INFO")


INSTANCE_LOCK = "instance.lock"
# The checks whose failure fails their step by design, with the asset they check: a run
# they fail has still materialised every asset (the version's verdict is its outcome).
_VERDICT_CHECKS = (("version_comparison", "no_regression"), ("benchmark_report", VERSION_PASSES))
_SPEND_BY_RUN = TypeAdapter(dict[str, JudgeSpend])


def prepare_dagster_home() -> Path:
    """Point DAGSTER_HOME at the project's instance (created on first use, telemetry off)."""
    home = settings.private_dir(settings.point_at_homes())
    config = home / "dagster.yaml"
    # The profile's instance (SQLite, or PostgreSQL from $N8N_DEEPEVAL_POSTGRES_URL); a
    # dagster.yaml edited by hand is left as it is.
    with FileLock(home / INSTANCE_LOCK):  # a second process never reads it half-written
        if not config.exists() or is_generated_instance_yaml(config.read_text(encoding="utf-8")):
            config.write_text(instance_yaml(settings.profile()), encoding="utf-8")
    return home


@contextmanager
def trial_instance(benchmark: str, folder: Path | None = None) -> Iterator[dg.DagsterInstance]:
    """A throwaway instance whose results go to the benchmark's trial folder (or ``folder``).

    The folder (report and DuckDB file) is replaced by each trial and kept afterwards to
    be read; the judge's cache and limits stay the shared ones.
    """
    folder = folder or settings.trial_dir(benchmark)
    shutil.rmtree(folder, ignore_errors=True)
    moved = {
        settings.JUDGE_STATE_ENV: str(settings.judge_state_dir()),
        settings.HOME_ENV: str(folder),
        settings.DATABASE_ENV: str(folder / "results.duckdb"),
        settings.PROFILE_ENV: "local",  # a trial never writes the shared database
    }
    before = {name: os.environ.get(name) for name in moved}
    os.environ.update(moved)
    try:
        with dg.DagsterInstance.ephemeral() as instance:
            yield instance
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def local_instance() -> Iterator[dg.DagsterInstance]:
    """The persistent local instance, created and migrated by one process at a time.

    Opening the instance creates its SQLite storage on first use and migrates it: two
    processes doing that at once can leave it with two migration heads, broken for good.
    """
    home = prepare_dagster_home()
    with FileLock(home / INSTANCE_LOCK):
        instance = dg.DagsterInstance.get()
    with instance:
        yield instance


class Materialised(NamedTuple):
    """How a materialisation ended."""

    completed: bool  # every step ran (a failed blocking check stops only its own)
    failed_checks: tuple[str, ...]
    errors: tuple[str, ...]  # the failed steps' errors and their causes, as text
    run_id: str | None = None
    attempts: dict[str, JudgeSpend] | None = None
    """Each Dagster run's judge spend on the scores this run stored (None: it stored none)."""
    report: Path | None = None
    """The report.html this run wrote for the version (None: it wrote none)."""


def _error_chain(error: SerializableErrorInfo | None) -> Iterator[str]:
    """A failed step's error and what caused it, outermost first."""
    while error is not None:
        yield error.message
        error = error.cause or error.context


class BenchmarkRunner:
    """Materialise a benchmark's assets for workflow versions, in this process."""

    def __init__(
        self,
        benchmark: Benchmark,
        source: Path,
        instance: dg.DagsterInstance,
        judge_cache: bool = True,
        selection: RowSelection | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.instance = instance
        self.defs = build_definitions([source], judge_cache, selection)
        self.partitions_name = partitions_for(benchmark).name or ""
        shorten_old_keys(instance, self.partitions_name)
        fail_abandoned_runs(instance)  # a CLI killed mid-run left its run STARTED

    def n8n(self) -> N8nResource:
        """The n8n resource of these definitions, its settings read from the environment."""
        resource = (self.defs.resources or {})["n8n"]
        assert isinstance(resource, N8nResource)
        resolved: N8nResource = resource.process_config_and_initialize()
        return resolved

    def label_store(self) -> LabelStore:
        """People's labels of this benchmark, where the profile keeps its results."""
        resource = (self.defs.resources or {})["human_labels"]
        assert isinstance(resource, HumanLabelsResource)
        resolved: HumanLabelsResource = resource.process_config_and_initialize()
        return resolved.store(self.benchmark)

    def calibration(self, with_thresholds: bool = True) -> Calibration | None:
        """The judges' agreement with people's labels now (None: no label, no section)."""
        labels = self.label_store().judged()
        if not labels and self.benchmark.calibration is None:
            return None
        return measure(self.benchmark, labels, with_thresholds)

    def _not_deciding(self) -> frozenset[str]:
        """What calibration.gate keeps from deciding runs and regressions now."""
        return gated_metrics(self.benchmark, lambda: self.label_store().judged())

    def register_current_version(self, workflow_hash: str | None = None) -> str:
        """Add the workflow's current version (its file, or n8n's) as a partition; its key.

        ``workflow_hash``: the current hash, when the caller has just read the workflow
        (validating the benchmark does); otherwise the workflow is read here.
        """
        digest = workflow_hash or current_hash(self.benchmark, self.n8n())
        return register_version(self.instance, self.partitions_name, digest)

    def register_current_family(self) -> list[Member]:
        """Add the current workflow and then each of its variants as partitions, in order."""
        members = current_family(self.benchmark, self.n8n())
        hashes = [member.workflow_hash for member in members]
        register_versions(self.instance, self.partitions_name, hashes)
        return members

    def known_versions(self) -> list[str]:
        """Every workflow version (its key) the instance knows for this benchmark."""
        return list(self.instance.get_dynamic_partitions(self.partitions_name))

    def versions_to_backfill(self, current: set[str]) -> tuple[list[str], list[str]]:
        """The known versions a backfill can run, and those it cannot, in registration order.

        It can run the ``current`` ones (the workflow and its variants) and every version
        whose outputs are stored; a version only production traffic registered (the online
        sensor) has none to re-score.
        """
        stored = self.instance.get_materialized_partitions(self._key("agent_outputs"))
        stored_keys = {version_key(partition) for partition in stored}
        known = self.known_versions()
        runnable = [key for key in known if key in current or key in stored_keys]
        return runnable, [key for key in known if key not in runnable]

    def materialise(
        self,
        partition: str,
        from_asset: str | None = None,
        verbose: bool = False,
        regenerate_attacks: bool = False,
        *,
        before_asset: str | None = None,
        only: tuple[str, ...] = (),
        tags: dict[str, str] | None = None,
        progress_prefix: str = "",
        limits: Limits | None = None,
    ) -> Materialised:
        """Run every asset (or ``from_asset`` and what is downstream of it) for one version.

        ``before_asset``: only what is not ``before_asset`` or downstream of it (the calls of
        a version whose scoring waits for its variants' calls); ``only``: these assets and
        nothing else. Dagster's log goes to stderr only when ``verbose``; otherwise only the
        steps' progress lines do (after ``progress_prefix``), and the errors are in what it
        returns. ``regenerate_attacks``: the red team generates a new attack set instead of
        playing the kept one. ``limits``: what the version's outcome holds it to (``run``'s
        options), so that its report and check say what ``run`` exits with.
        """
        graph = self.defs.resolve_asset_graph()
        selection = None
        if from_asset is not None:
            selection = list(self._downstream(from_asset).resolve(graph))
        if before_asset is not None:
            every = dg.AssetSelection.groups(self.benchmark.name)
            chosen = every - self._downstream(before_asset)
            selection = list(chosen.resolve(graph))
        if only:
            selection = [self._key(asset) for asset in only]
        ops: dict[str, Any] = {}
        if regenerate_attacks:
            ops[self._step("red_team_attacks")] = {"config": {"regenerate": True}}
        given = None if limits is None else limits.given_error_rate
        if limits is not None and self._selects(selection, "benchmark_report"):
            wanted = {"max_error_rate": given, "fail_under": limits.fail_under}
            ops[self._step("benchmark_report")] = {"config": wanted}
        if given is not None and self._selects(selection, "metric_scores"):
            # its error_rate check holds the scores to the limit the outcome holds them to
            ops[self._step("metric_scores")] = {"config": {"max_error_rate": given}}
        run_config = _VERBOSE_LOGS if verbose else _QUIET_LOGS
        if ops:
            run_config = {**run_config, "ops": ops}
        with nullcontext() if verbose else progress_on_stderr(progress_prefix):
            result = self._execute(partition, selection, run_config, tags or {})
        failed_checks = tuple(
            check.check_name for check in result.get_asset_check_evaluations() if not check.passed
        )
        failures = [event for event in result.all_events if event.is_step_failure]
        failed_steps = {event.step_key for event in failures}
        errors = tuple(
            message for event in failures for message in _error_chain(event.step_failure_data.error)
        )
        # A blocking verdict check fails its step by design: the run itself is complete.
        verdicts = {self._step(asset) for asset, check in _VERDICT_CHECKS if check in failed_checks}
        gated = bool(failed_steps) and failed_steps <= verdicts
        return Materialised(
            result.success or gated,
            failed_checks,
            errors,
            result.run_id,
            self._spend(result),
            self._report(result),
        )

    def _selects(self, selection: list[dg.AssetKey] | None, asset: str) -> bool:
        """Whether a run of this selection materialises ``asset`` (a benchmark has it)."""
        if selection is None:
            return asset in self.asset_names()
        return self._key(asset) in selection

    def _spend(self, result: ExecutionResult) -> dict[str, JudgeSpend] | None:
        """The judge spend of every attempt, from the run's materialisation of metric_scores."""
        key = dg.AssetKey([self.benchmark.name, "metric_scores"])
        for event in result.get_asset_materialization_events():
            materialisation = event.step_materialization_data.materialization
            entry = materialisation.metadata.get(ATTEMPTS_METADATA)
            if materialisation.asset_key == key and entry is not None:
                return _SPEND_BY_RUN.validate_python(entry.value)
        return None

    def _report(self, result: ExecutionResult) -> Path | None:
        """The report.html the run's materialisation of benchmark_report names, if it wrote one."""
        key = self._key("benchmark_report")
        for event in result.get_asset_materialization_events():
            materialisation = event.step_materialization_data.materialization
            entry = materialisation.metadata.get(REPORT_METADATA)
            if materialisation.asset_key == key and entry is not None:
                return Path(str(entry.value))
        return None

    def _downstream(self, asset: str) -> dg.AssetSelection:
        if asset not in self.asset_names():
            names = ", ".join(self.asset_names())
            raise ValueError(f"unknown asset {asset!r}; assets: {names}")
        # A step that writes two tables (agent_outputs, output_images) runs whole.
        downstream = dg.AssetSelection.assets([self.benchmark.name, asset]).downstream()
        return downstream.required_multi_asset_neighbors()

    def asset_names(self) -> list[str]:
        """The benchmark's assets, as ``--from`` names them (the sink's too, if it has one)."""
        keys = self.defs.resolve_asset_graph().get_all_asset_keys()
        names = (*ASSET_NAMES, *RED_TEAM_ASSETS, "data_table_sink", "run_trace")
        return [name for name in names if self._key(name) in keys]

    def _key(self, asset: str) -> dg.AssetKey:
        return dg.AssetKey([self.benchmark.name, asset])

    def _execute(
        self,
        partition: str,
        selection: list[dg.AssetKey] | None,
        run_config: dict[str, Any],
        extra_tags: dict[str, str],
    ) -> ExecutionResult:
        """Run the benchmark's job in this process, as a run of the UI's code location.

        ``execute_in_process`` makes runs without an origin, which the UI shows on no job,
        partition or asset page; this one has the origin of the job the UI loads.
        """
        job = self.defs.resolve_job_def(job_name(self.benchmark))
        tags = merge_run_tags(
            job, partition, {**owner_tags(), **extra_tags}, selection, self.instance, None
        )
        in_process = job.as_ephemeral_job(resource_defs={}, input_values={})
        run = self.instance.create_run_for_job(
            job_def=in_process,
            run_config=run_config,
            tags=tags,
            asset_selection=frozenset(selection) if selection is not None else None,
            remote_job_origin=ui_job_origin(job.name),
        )
        with OPEN_DATABASES.kept_open():  # the steps in this process share one open database
            return execute_run(InMemoryJob(in_process), run, self.instance)

    def _step(self, asset: str) -> str:
        return f"{self.benchmark.name}__{asset}"

    def _table(self, name: str, model: type[Row], partition: str | list[str]) -> list[Row]:
        """A table's rows of these versions (none of a table the benchmark has not)."""
        if partition == [] or name not in self.asset_names():
            return []
        frame = load_stored(self.defs, self.instance, self._key(name), partition)
        return from_frame(model, frame)

    def snapshots(self, versions: list[str]) -> list[WorkflowSnapshot]:
        """The stored workflow snapshots of these versions (variants say whose they are)."""
        return self._table("workflow_snapshot", WorkflowSnapshot, versions)

    def family_of(self, base: str) -> list[tuple[str, WorkflowSnapshot]]:
        """The scored versions of a workflow version's family: it, then its variants.

        Each with its snapshot, the variants in the order they were registered.
        """
        scored = scored_versions(self.instance, self.benchmark)
        snapshots = {version_key(s.workflow_hash): s for s in self.snapshots(scored)}
        if base not in snapshots:
            return []
        base_hash = snapshots[base].workflow_hash
        latest: dict[str, tuple[str, WorkflowSnapshot]] = {}  # by name: a redefined variant
        for version in scored:  # registration order: the workflow, then its variants
            snapshot = snapshots.get(version)
            if snapshot is not None and (version == base or snapshot.base_hash == base_hash):
                latest.pop(snapshot.variant or BASE, None)
                latest[snapshot.variant or BASE] = (version, snapshot)
        return list(latest.values())

    def record(self, partition: str, path: Path) -> int:
        """Append the version's stored outputs to a recorded outputs file; lines written."""
        lines = recording_lines(
            self._table("expanded_runs", ExpandedRun, partition),
            self._table("agent_outputs", AgentOutput, partition),
            self._table("output_images", OutputImage, partition),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as recorded:
            recorded.writelines(line + "\n" for line in lines)
        return len(lines)

    def stored_versions(self, versions: list[str]) -> StoredVersions:
        """The stored runs, aggregates and scores of these versions (a read per table).

        Compared without the metrics ``calibration.gate`` keeps from deciding now.
        """
        return StoredVersions(
            self._table("expanded_runs", ExpandedRun, versions),
            self._table("run_aggregates", RunAggregate, versions),
            self._table("metric_scores", MetricScore, versions),
            self._not_deciding(),
        )

    def runs_to_review(self, version: str) -> RunsToReview:
        """A version's runs, outputs, dataset rows and scores, for a reviewer to label."""
        return RunsToReview(
            runs=self._table("expanded_runs", ExpandedRun, version),
            outputs=self._table("agent_outputs", AgentOutput, version),
            dataset=self._table("dataset_rows", DatasetRow, version),
            scores=self._table("metric_scores", MetricScore, version),
        )

    def output_images(self, version: str) -> list[OutputImage]:
        """A version's stored images, by hash (what its runs' texts mark)."""
        return self._table("output_images", OutputImage, version)

    def online_scores(self) -> list[OnlineScore]:
        """Every production item scored online, every day stored (none without online)."""
        if self.benchmark.online is None:
            return []
        key = self._key("online_scores")
        days = sorted(self.instance.get_materialized_partitions(key))
        return self._table("online_scores", OnlineScore, days)

    def scenarios(self, version: str) -> dict[str, str]:
        """Row id → scenario of the version's simulated conversations' rows (none without)."""
        rows = self._table("dataset_rows", DatasetRow, version)
        return {row.row_id: row.scenario for row in rows if row.scenario}

    def variant_matrix(self, version: str) -> VariantMatrix:
        """The matrix of a scored version's family: the workflow and its variants."""
        bases = variant_bases(self.snapshots([version]))
        members = self.family_of(bases.get(version, version))
        if len(members) < 2:
            raise UnknownVersionError(
                f"workflow {version_key(version)} has no variant scored yet: run the benchmark "
                "with target.variants"
            )
        keys = [key for key, _ in members]
        return variant_matrix(
            self.benchmark.name,
            [(snapshot.variant or BASE, snapshot.workflow_hash) for _, snapshot in members],
            self.stored_versions(keys),
            self._table("agent_outputs", AgentOutput, keys),
            self.benchmark.metric_labels,
            self.benchmark.head_to_head,
        )

    def candidate_version(self, prefix: str | None) -> str:
        """A scored version by hash or prefix; by default the workflow's current one."""
        scored = scored_versions(self.instance, self.benchmark)
        if prefix:
            return resolve_version(scored, prefix)
        key = version_key(current_hash(self.benchmark, self.n8n()))
        if key not in scored:
            raise UnknownVersionError(f"the current version {key} has not been run yet")
        return key

    def baseline_of(self, candidate: str, pinned: str | None = None) -> str | None:
        """The version a candidate is compared with.

        A variant's base; else ``pinned`` (a prefix), ``compare.baseline``, or the scored
        version before (variants skipped).
        """
        scored = scored_versions(self.instance, self.benchmark)
        bases = variant_bases(self.snapshots(scored))
        return baseline_version(scored, candidate, pinned or self.benchmark.compare.baseline, bases)

    def versions_to_compare(self, baseline: str | None, candidate: str | None) -> tuple[str, str]:
        """Baseline and candidate hashes from prefixes, or their defaults."""
        chosen = self.candidate_version(candidate)
        before = self.baseline_of(chosen, baseline)
        if before is None:
            raise UnknownVersionError(
                f"no version before {chosen[:12]} to compare with: run another version first"
            )
        return before, chosen

    def outcome(
        self,
        partition: str,
        limits: Limits | None = None,
        baseline: str | None = None,
        summary: BenchmarkSummary | None = None,
    ) -> VersionOutcome:
        """A stored version's outcome: what ``run`` and ``compare`` exit with for it.

        ``limits``: ``run``'s options (default: the benchmark's checks); ``baseline``: the
        version it is compared with (default: its own, ``baseline_of``); ``summary``: the
        version's, when the caller has just read it (else read here). Built as the report
        and its version_passes check build it, from the same rows.
        """
        baseline = baseline if baseline is not None else self.baseline_of(partition)
        stored = self.stored_versions([partition] + ([baseline] if baseline else []))
        summary = summary or self.summary(partition)
        comparison = stored.compare(baseline, partition) if baseline else None
        return outcome_from_rows(
            summary,
            comparison,
            stored.full_hash(baseline) if baseline else None,
            self.benchmark.compare.fail_on,
            self._red_team_rows(partition),
            limits or Limits.of(self.benchmark.checks.max_error_rate),
        )

    def report(self, partition: str) -> Report:
        """The version's report, compared with its baseline when it has one.

        A workflow with variants (or one of them) has its family set side by side.
        """
        baseline = self.baseline_of(partition)
        bases = variant_bases(self.snapshots([partition]))
        family = [key for key, _ in self.family_of(bases.get(partition, partition))]
        versions = list(dict.fromkeys([partition, *([baseline] if baseline else []), *family]))
        own = ReportOnlyTables(
            outputs=self._table("agent_outputs", AgentOutput, versions),
            consistency=self._table("consistency_stats", ConsistencyStats, partition),
            dataset=self._table("dataset_rows", DatasetRow, partition),
            snapshots=self.snapshots(versions),
            checks=self._table("workflow_checks", WorkflowCheck, partition),
            images=self._table("output_images", OutputImage, versions),
        )
        return version_report(
            self.benchmark,
            partition,
            baseline,
            self.stored_versions(versions),
            own,
            self._red_team_rows(partition),
            calibration=self.calibration(),
        )

    def _red_team_rows(self, partition: str) -> RedTeamRows | None:
        """A version's red-team rows and its baseline's attacks (None: none were played)."""
        if self.benchmark.red_team is None:
            return None
        attacked = red_teamed_versions(self.instance, self.benchmark)
        if version_key(partition) not in attacked:
            return None
        before = baseline_version(attacked, partition, self.benchmark.compare.baseline)
        return RedTeamRows(
            self.red_team_rates(partition),
            self.red_team_results(partition),
            self.red_team_results(before) if before else None,
        )

    def red_team_rates(self, partition: str) -> list[BreachRate]:
        """The version's breach rates (a benchmark with a redTeam section)."""
        return self._table("red_team_summary", BreachRate, partition)

    def red_team_results(self, partition: str) -> list[RedTeamResult]:
        """The version's played attacks (a benchmark with a redTeam section)."""
        return self._table("red_team_results", RedTeamResult, partition)

    def summary(self, partition: str) -> BenchmarkSummary:
        """Headline figures of one version, read back from storage."""
        scores = self._table("metric_scores", MetricScore, partition)
        outputs = self._table("agent_outputs", AgentOutput, partition)
        calibration = (
            self.calibration(with_thresholds=False) if self.benchmark.calibration else None
        )
        summary = summarise(
            self.benchmark.name,
            full_hash(scores, partition),
            scores,
            self._table("run_aggregates", RunAggregate, partition),
            self._table("consistency_stats", ConsistencyStats, partition),
            self.benchmark.metric_labels,
            outputs,
            calibration.standings if calibration is not None else (),
        )
        checks = self._table("workflow_checks", WorkflowCheck, partition)
        snapshots = self.snapshots([partition])
        variant = snapshots[0].variant if snapshots else None
        simulated = simulation_summary(outputs) if self.benchmark.simulation is not None else None
        update = {"workflow_checks": checks, "simulation": simulated, "variant": variant}
        return summary.model_copy(update=update)
