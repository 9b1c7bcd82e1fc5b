"""The metric catalog: every entry of every category, by slug.

The DeepEval classes are named, not imported, so the catalog loads in the Dagster
process without DeepEval; only worker processes build metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field

from n8n_deepeval_pipeline.metrics import (
    agentic,
    community,
    custom,
    multi_turn,
    n8n,
    others,
    safety,
)
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import MetricConfig

_ENTRIES: tuple[MetricEntry, ...] = (
    *custom.ENTRIES,
    *agentic.ENTRIES,
    *multi_turn.ENTRIES,
    *safety.ENTRIES,
    *others.ENTRIES,
    *community.ENTRIES,
    *n8n.ENTRIES,
)


def _index(entries: tuple[MetricEntry, ...]) -> dict[str, MetricEntry]:
    catalog: dict[str, MetricEntry] = {}
    for entry in entries:
        if entry.slug in catalog:
            raise ValueError(f"duplicate metric slug in the catalog: {entry.slug}")
        catalog[entry.slug] = entry
    return catalog


CATALOG: dict[str, MetricEntry] = _index(_ENTRIES)

if TYPE_CHECKING:
    MetricSpec = MetricConfig
else:
    # One tagged union over every config model: the slug picks the model, and an
    # unknown slug is answered with the list of valid ones.
    MetricSpec = Annotated[
        Union[tuple(entry.config_model for entry in _ENTRIES)],  # noqa: UP007
        Field(discriminator="metric"),
    ]


def entry_for(config: MetricConfig) -> MetricEntry:
    """The catalog entry of a validated metric config."""
    return CATALOG[config.metric]
