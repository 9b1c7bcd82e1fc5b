"""Workflow versions as partitions: registered under their short version key.

Partition keys are the first 12 hex of the workflow hash, so that plots, lists and run
names in the UI stay readable; the tables keep the full hash. Instances written before
keys were shortened hold 64-hex keys, which are renamed to their version keys in place
(in registration order, which is what the baseline rule reads).
"""

from __future__ import annotations

import dagster as dg

from n8n_deepeval_pipeline.workflow.hashing import VERSION_KEY_LENGTH, version_key


def shorten_old_keys(instance: dg.DagsterInstance, partitions_name: str) -> list[str]:
    """Rename full-hash partition keys to version keys; return the keys renamed."""
    known = list(instance.get_dynamic_partitions(partitions_name))
    old = [key for key in known if len(key) > VERSION_KEY_LENGTH]
    if not old:
        return []
    for key in known:  # re-added in order, so that "registered before" keeps its meaning
        instance.delete_dynamic_partition(partitions_name, key)
    ordered = list(dict.fromkeys(version_key(key) for key in known))
    instance.add_dynamic_partitions(partitions_name, ordered)
    return old


def register_version(instance: dg.DagsterInstance, partitions_name: str, workflow_hash: str) -> str:
    """Make the workflow version a partition (if it is not one yet); return its key."""
    shorten_old_keys(instance, partitions_name)
    key = version_key(workflow_hash)
    if not instance.has_dynamic_partition(partitions_name, key):
        instance.add_dynamic_partitions(partitions_name, [key])
    return key


def register_versions(
    instance: dg.DagsterInstance, partitions_name: str, workflow_hashes: list[str]
) -> list[str]:
    """Register several versions in order (a workflow, then its variants); their keys."""
    return [register_version(instance, partitions_name, digest) for digest in workflow_hashes]
