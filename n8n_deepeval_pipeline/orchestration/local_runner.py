"""Run benchmarks on the local Dagster instance that the UI and the daemon share."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark_config import Benchmark
from n8n_deepeval_pipeline.orchestration.assets import ASSET_NAMES, partitions_for
from n8n_deepeval_pipeline.orchestration.automation import current_hash, job_name
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.summary import BenchmarkSummary, summarise
from n8n_deepeval_pipeline.tables.frames import Row, from_frame
from n8n_deepeval_pipeline.tables.recorded_outputs import recording_lines
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    ExpandedRun,
    MetricScore,
    RunAggregate,
)

_INSTANCE_YAML = "telemetry:\n  enabled: false\n"
_QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def prepare_dagster_home() -> Path:
    """Point DAGSTER_HOME at the project's instance (created on first use, telemetry off)."""
    home = settings.dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(_INSTANCE_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)
    # Absolute, so that the UI's code servers find the same database whatever their cwd.
    os.environ[settings.HOME_ENV] = str(settings.home())
    return home


@contextmanager
def local_instance() -> Iterator[dg.DagsterInstance]:
    """The persistent local instance."""
    prepare_dagster_home()
    with dg.DagsterInstance.get() as instance:
        yield instance


class BenchmarkRunner:
    """Materialise a benchmark's assets for workflow versions, in this process."""

    def __init__(
        self,
        benchmark: Benchmark,
        source: Path,
        instance: dg.DagsterInstance,
        judge_cache: bool = True,
    ) -> None:
        self.benchmark = benchmark
        self.instance = instance
        self.defs = build_definitions([source], judge_cache)
        self.partitions_name = partitions_for(benchmark).name or ""

    def n8n(self) -> N8nResource:
        """The n8n resource of these definitions, its settings read from the environment."""
        resource = (self.defs.resources or {})["n8n"]
        assert isinstance(resource, N8nResource)
        resolved: N8nResource = resource.process_config_and_initialize()
        return resolved

    def register_current_version(self) -> str:
        """Add the workflow's current hash (its file, or n8n's) as a partition; return it."""
        key = current_hash(self.benchmark, self.n8n())
        if not self.instance.has_dynamic_partition(self.partitions_name, key):
            self.instance.add_dynamic_partitions(self.partitions_name, [key])
        return key

    def known_versions(self) -> list[str]:
        """Every workflow hash the instance knows for this benchmark."""
        return list(self.instance.get_dynamic_partitions(self.partitions_name))

    def materialise(self, partition: str, from_asset: str | None = None) -> bool:
        """Run every asset (or ``from_asset`` and what is downstream of it) for one version."""
        job = self.defs.resolve_job_def(job_name(self.benchmark))
        selection = None
        if from_asset is not None:
            if from_asset not in ASSET_NAMES:
                raise ValueError(f"unknown asset {from_asset!r}; assets: {', '.join(ASSET_NAMES)}")
            selection = dg.AssetSelection.assets([self.benchmark.name, from_asset]).downstream()
        result = job.execute_in_process(
            partition_key=partition,
            instance=self.instance,
            run_config=_QUIET_LOGS,
            raise_on_error=False,
            asset_selection=list(selection.resolve(self.defs.resolve_asset_graph()))
            if selection is not None
            else None,
        )
        return result.success

    def _table(self, name: str, model: type[Row], partition: str) -> list[Row]:
        frame = self.defs.load_asset_value(
            [self.benchmark.name, name], instance=self.instance, partition_key=partition
        )
        return from_frame(model, frame)  # type: ignore[arg-type]

    def record(self, partition: str, path: Path) -> int:
        """Append the version's stored outputs to a recorded outputs file; lines written."""
        lines = recording_lines(
            self._table("expanded_runs", ExpandedRun, partition),
            self._table("agent_outputs", AgentOutput, partition),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as recorded:
            recorded.writelines(line + "\n" for line in lines)
        return len(lines)

    def summary(self, partition: str) -> BenchmarkSummary:
        """Headline figures of one version, read back from storage."""
        return summarise(
            self.benchmark.name,
            partition,
            self._table("metric_scores", MetricScore, partition),
            self._table("run_aggregates", RunAggregate, partition),
            self._table("consistency_stats", ConsistencyStats, partition),
            self.benchmark.metric_labels,
        )
