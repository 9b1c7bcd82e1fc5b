"""A benchmark's partitions (one per workflow version) and the checks evaluated per version."""

from __future__ import annotations

import warnings
from typing import Any

import dagster as dg

from n8n_deepeval_pipeline.benchmark.config import Benchmark


def partitions_for(benchmark: Benchmark) -> dg.DynamicPartitionsDefinition:
    """One partition per workflow version, keyed by its version key (12 hex of the hash)."""
    return dg.DynamicPartitionsDefinition(name=f"{benchmark.name}__workflow_hash")


def version_check(
    name: str, benchmark: Benchmark, asset: dg.AssetKey, **options: Any
) -> dg.AssetCheckSpec:
    """A check evaluated for one workflow version: its results carry the partition.

    Unpartitioned, a check of a partitioned asset has one status for every version: the UI
    says "Partition —", and after a backfill a failed version reads "Not evaluated".
    """
    with warnings.catch_warnings():
        # Dagster marks partitioned checks a preview; the warning would be said at every load.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(
            name, asset=asset, partitions_def=partitions_for(benchmark), **options
        )
