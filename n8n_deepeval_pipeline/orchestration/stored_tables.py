"""A stored partition of an asset, read back by the asset's own IO manager; an image by hash."""

from __future__ import annotations

from typing import Any

import dagster as dg
from dagster._core.execution.build_resources import get_mapped_resource_config
from dagster._core.execution.resources_init import get_transitive_required_resource_keys
from dagster._core.types.dagster_type import resolve_dagster_type

from n8n_deepeval_pipeline.tables.frames import from_frame
from n8n_deepeval_pipeline.tables.output_images import image_by_hash
from n8n_deepeval_pipeline.tables.rows import OutputImage


def load_stored(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    partition: str | list[str],
) -> Any:
    """What ``Definitions.load_asset_value`` returns, with ``instance`` throughout.

    Dagster's own builds a throwaway in-memory instance for each of the two contexts it
    makes (~0.25 s each: a summary of four tables spent ~2 s on them). A list of
    partitions is read in one go, as an input that maps to every partition is.
    """
    partitions_list = [partition] if isinstance(partition, str) else partition
    assets_def = defs.resolve_assets_def(key)
    partitions = assets_def.partitions_def
    assert partitions is not None, f"{key.to_user_string()} is not partitioned"
    manager_key = assets_def.get_io_manager_key_for_asset_key(key)
    needed = get_transitive_required_resource_keys({manager_key}, assets_def.resource_defs)
    resource_defs = {name: assets_def.resource_defs[name] for name in needed | {manager_key}}
    config = get_mapped_resource_config({manager_key: resource_defs[manager_key]}, {})
    with dg.build_resources(resource_defs, instance=instance) as resources:
        upstream = dg.build_output_context(
            name=assets_def.get_output_name_for_asset_key(key),
            definition_metadata=assets_def.specs_by_key[key].metadata,
            asset_key=key,
            op_def=assets_def.get_op_def_for_asset_key(key),
            resources=resources,
            instance=instance,
        )
        # Not build_input_context: it takes resources only as a mapping, and builds them
        # again without the instance.
        context = dg.InputContext(
            asset_key=key,
            upstream_output=upstream,
            dagster_type=resolve_dagster_type(None),
            resources=resources,
            resource_config=config[manager_key].config,
            partition_key=partition if isinstance(partition, str) else None,
            asset_partitions_subset=partitions.subset_with_partition_keys(partitions_list),
            asset_partitions_def=partitions,
            instance=instance,
        )
        return getattr(resources, manager_key).load_input(context)


def stored_image(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    benchmark: str,
    version: str,
    sha256: str,
) -> OutputImage | None:
    """One image of a stored version, by its content hash (or a prefix of it); None if absent.

    What a page showing a run reads for each ``[DEEPEVAL:IMAGE:<sha256>]`` of its texts and
    each entry of its ``agent_outputs.images``: the image's type and base64 bytes, or a
    remote image's URL.
    """
    frame = load_stored(defs, instance, dg.AssetKey([benchmark, "output_images"]), version)
    return image_by_hash(from_frame(OutputImage, frame), sha256)
