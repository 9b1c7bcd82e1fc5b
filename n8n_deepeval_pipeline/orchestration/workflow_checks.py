"""The ``workflow_checks`` asset: a version's stored workflow graded, shown, never gating.

It reads the partition's ``workflow_snapshot`` table, not the workflow: a re-score or a
backfill grades versions that n8n (or the file) no longer has. Its asset check
``workflow_checks_pass`` is a warning and never blocks: the checks are signals next to
the benchmark's results, not a condition of them.
"""

# No postponed annotations: Dagster inspects the annotations of asset functions.
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.orchestration.partitions import version_check
from n8n_deepeval_pipeline.summary.run_summary import (
    workflow_check_counts,
    workflow_checks_markdown,
)
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.frames import from_frame, to_frame
from n8n_deepeval_pipeline.tables.rows import WorkflowCheck, WorkflowSnapshot

ASSET = "workflow_checks"
CHECK = "workflow_checks_pass"


def workflow_checks_metadata(rows: list[WorkflowCheck]) -> dict[str, Any]:
    """The counts the UI charts across versions, and the table of every check."""
    counts = workflow_check_counts(rows)
    return {
        "passed": dg.MetadataValue.int(counts["pass"]),
        "failed": dg.MetadataValue.int(counts["fail"]),
        "not_applicable": dg.MetadataValue.int(counts["not_applicable"]),
        "checks": dg.MetadataValue.md(workflow_checks_markdown(rows)),
    }


def build_workflow_checks_asset(
    benchmark: Benchmark, common: dict[str, Any]
) -> dg.AssetsDefinition:
    """The asset of a benchmark, with the keyword arguments every asset of it shares."""
    key = dg.AssetKey([benchmark.name, ASSET])

    @dg.asset(
        name=ASSET,
        description="Deterministic checks of this version's workflow JSON: structure (a "
        "trigger, reachable nodes, no dangling connections), AI wiring (agents have a model; "
        "tools and memories are connected) and security (no hard-coded credentials, "
        "authenticated webhooks). Pass, fail or not applicable, with the nodes concerned.",
        ins={
            "workflow_snapshot": dg.AssetIn(key=dg.AssetKey([benchmark.name, "workflow_snapshot"]))
        },
        check_specs=[
            version_check(
                CHECK,
                benchmark,
                key,
                blocking=False,
                description="No workflow check fails (a warning: the checks never fail the "
                "benchmark; see the asset's `checks` table for the nodes concerned).",
            )
        ],
        **common,
    )
    def workflow_checks(
        context: dg.AssetExecutionContext, workflow_snapshot: pd.DataFrame
    ) -> Iterator[dg.Output[pd.DataFrame] | dg.AssetCheckResult]:
        rows = steps.workflow_checks(from_frame(WorkflowSnapshot, workflow_snapshot))
        failed = [row.check_id for row in rows if row.status == "fail"]
        if failed:
            context.log.warning(f"workflow checks failed: {', '.join(failed)}")
        yield dg.Output(to_frame(WorkflowCheck, rows), metadata=workflow_checks_metadata(rows))
        yield dg.AssetCheckResult(
            check_name=CHECK,
            asset_key=key,
            passed=not failed,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"failed_checks": ", ".join(failed) or "none"},
        )

    checks_asset: dg.AssetsDefinition = workflow_checks
    return checks_asset
