"""A benchmark's scored versions in the order they ran, their figures and their baselines.

The store keeps no registration order (Dagster does): a version's place is when its run
last read the workflow (``workflow_snapshot.fetched_at``). Its baseline is the one its
run compared it with (``version_comparison.baseline_hash``: the version registered
before it, by the rule ``compare`` applies), unless the rule does not depend on that order
(a pinned ``compare.baseline``, a variant's base) or the run stored no comparison; then
the rule of ``tables.comparison.baseline_version`` is applied to the run order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.statistics.version_comparison import (
    OverallPassRate,
    wilson_interval,
)
from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError, baseline_version
from n8n_deepeval_pipeline.workflow.hashing import version_key
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkSettings
from n8n_deepeval_pipeline.workspace.store import (
    Reader,
    placeholders,
    select_list,
    stored_columns,
    table,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class StoredVersion(_Frozen):
    """A scored version of a benchmark: when it ran, what it is, how many runs passed."""

    key: str  # the version key (12 hex), as URLs and the CLI name it
    workflow_hash: str
    ran_at: datetime | None  # when its last run read the workflow
    workflow_name: str | None
    variant: str | None  # None: the workflow itself
    base_hash: str | None  # a variant's workflow
    pass_rate: OverallPassRate  # runs passed under the pass rule, Wilson 95% interval

    @property
    def label(self) -> str:
        """The version as a chart labels it: its key, and its variant's name."""
        return self.key + (f" · {self.variant}" if self.variant else "")


class VersionCosts(_Frozen):
    """What a version's runs cost and how long they took."""

    runs: int
    judge_cost_usd: float | None  # every score's judge cost summed (None: none priced)
    workflow_cost_per_run_usd: float | None  # the workflow's own models (None: unpriced)
    latency_p50_s: float | None
    n8n_version_ids: tuple[str, ...]  # n8n's ids of the version, where production named it


def pass_rate(passed: int, runs: int) -> OverallPassRate:
    """``passed`` of ``runs`` as the report shows a pass rate, with its Wilson interval."""
    return OverallPassRate(
        passed=passed,
        runs=runs,
        rate=passed / runs if runs else None,
        interval=wilson_interval(passed, runs),
    )


def scored_versions(reader: Reader, schema: str) -> list[StoredVersion]:
    """Every version with aggregated runs, oldest run first (unknown times first)."""
    counts = reader.records(
        "select workflow_hash, count(*) as runs, "
        "sum(case when overall_success then 1 else 0 end) as passed "
        f"from {table(schema, 'run_aggregates')} group by workflow_hash"
    )
    columns = select_list(
        reader,
        schema,
        "workflow_snapshot",
        ["workflow_hash", "fetched_at", "name", "variant", "base_hash"],
    )
    snapshots = {
        str(record["workflow_hash"]): record
        for record in reader.records(f"select {columns} from {table(schema, 'workflow_snapshot')}")
    }
    versions = []
    for record in counts:
        digest = str(record["workflow_hash"])
        snapshot = snapshots.get(digest, {})
        versions.append(
            StoredVersion(
                key=version_key(digest),
                workflow_hash=digest,
                ran_at=snapshot.get("fetched_at"),
                workflow_name=snapshot.get("name"),
                variant=snapshot.get("variant"),
                base_hash=snapshot.get("base_hash"),
                pass_rate=pass_rate(int(record["passed"] or 0), int(record["runs"])),
            )
        )
    return sorted(versions, key=lambda v: (v.ran_at is not None, v.ran_at or 0, v.key))


def find_version(versions: Sequence[StoredVersion], key: str) -> StoredVersion | None:
    """The version whose key (or full hash) is ``key``."""
    return next((v for v in versions if v.key == version_key(key)), None)


def baselines(
    reader: Reader, schema: str, versions: Sequence[StoredVersion], benchmark: BenchmarkSettings
) -> dict[str, str | None]:
    """Each version's baseline (version keys; None: the version has none)."""
    known = [version.key for version in versions]
    bases = {v.key: version_key(v.base_hash) for v in versions if v.base_hash is not None}
    compared = _stored_baselines(reader, schema)
    found: dict[str, str | None] = {}
    for key in known:
        stored = compared.get(key)
        if benchmark.pinned_baseline is None and key not in bases and stored in known:
            found[key] = stored
            continue
        try:
            found[key] = baseline_version(known, key, benchmark.pinned_baseline, bases)
        except UnknownVersionError:  # a pinned prefix that names no scored version
            found[key] = None
    return found


def _stored_baselines(reader: Reader, schema: str) -> dict[str, str]:
    """The baseline each version's run compared it with, by version key."""
    if not stored_columns(reader, schema, "version_comparison"):
        return {}
    return {
        version_key(str(record["workflow_hash"])): version_key(str(record["baseline_hash"]))
        for record in reader.records(
            "select distinct workflow_hash, baseline_hash "
            f"from {table(schema, 'version_comparison')}"
        )
    }


def version_costs(
    reader: Reader, schema: str, versions: Sequence[StoredVersion]
) -> dict[str, VersionCosts]:
    """Cost and latency of each version named (one query per table for all of them)."""
    hashes = [version.workflow_hash for version in versions]
    if not hashes:
        return {}
    judged = {
        str(record["workflow_hash"]): record
        for record in reader.records(
            "select workflow_hash, count(*) as runs, sum(cost_usd) as cost, "
            "count(cost_usd) as priced "
            f"from {table(schema, 'run_aggregates')} "
            f"where workflow_hash in ({placeholders(hashes)}) group by workflow_hash",
            hashes,
        )
    }
    own = _workflow_costs(reader, schema, hashes)
    latencies = _latencies(reader, schema, hashes)
    ids = n8n_version_ids(reader, schema)
    costs = {}
    for version in versions:
        record = judged.get(version.workflow_hash, {})
        costs[version.key] = VersionCosts(
            runs=int(record.get("runs") or 0),
            judge_cost_usd=float(record["cost"]) if record.get("priced") else None,
            workflow_cost_per_run_usd=own.get(version.workflow_hash),
            latency_p50_s=latencies.get(version.workflow_hash),
            n8n_version_ids=tuple(ids.get(version.workflow_hash, [])),
        )
    return costs


def _workflow_costs(reader: Reader, schema: str, hashes: list[str]) -> dict[str, float | None]:
    """The workflow's own cost per measured run; None when a measured run is unpriced.

    As ``summary.workflow_usage``: a model without a price leaves the cost unknown.
    """
    columns = select_list(
        reader, schema, "agent_outputs", ["workflow_hash", "llm_prompt_tokens", "llm_cost_usd"]
    )
    records = reader.records(
        "select workflow_hash, count(llm_prompt_tokens) as measured, "
        "count(llm_cost_usd) as priced, sum(llm_cost_usd) as cost "
        f"from (select {columns} from {table(schema, 'agent_outputs')} "
        f"where workflow_hash in ({placeholders(hashes)})) as outputs group by workflow_hash",
        hashes,
    )
    return {
        str(r["workflow_hash"]): float(r["cost"]) / int(r["measured"])
        if r["measured"] and r["priced"] == r["measured"]
        else None
        for r in records
    }


def _latencies(reader: Reader, schema: str, hashes: list[str]) -> dict[str, float]:
    """Each version's median latency, interpolated as ``summary.workflow_usage.percentile``."""
    return {
        str(record["workflow_hash"]): float(record["p50"])
        for record in reader.records(
            "select workflow_hash, percentile_cont(0.5) within group (order by latency_s) as p50 "
            f"from {table(schema, 'agent_outputs')} "
            f"where workflow_hash in ({placeholders(hashes)}) and latency_s is not null "
            "group by workflow_hash",
            hashes,
        )
    }


def n8n_version_ids(reader: Reader, schema: str) -> dict[str, list[str]]:
    """n8n's version ids of each workflow hash, where production executions named them."""
    if not stored_columns(reader, schema, "online_scores"):
        return {}
    found: dict[str, list[str]] = {}
    for record in reader.records(
        f"select distinct workflow_hash, n8n_version_id from {table(schema, 'online_scores')} "
        "where n8n_version_id is not null and version_match = 'version_id' "
        "order by n8n_version_id"
    ):
        found.setdefault(str(record["workflow_hash"]), []).append(str(record["n8n_version_id"]))
    return found
