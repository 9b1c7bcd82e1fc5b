"""The metric catalog: every entry of every category, by slug.

The DeepEval classes are named, not imported, so the catalog loads in the Dagster
process without DeepEval; only worker processes build metrics.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Union

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from n8n_deepeval_pipeline.config.errors import MISSING_METRIC, UNKNOWN_METRIC
from n8n_deepeval_pipeline.metrics import (
    agentic,
    community,
    custom,
    images,
    mcp,
    multi_turn,
    n8n,
    others,
    rag,
    safety,
)
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import MetricConfig

_ENTRIES: tuple[MetricEntry, ...] = (
    *custom.ENTRIES,
    *agentic.ENTRIES,
    *multi_turn.ENTRIES,
    *rag.ENTRIES,
    *safety.ENTRIES,
    *others.ENTRIES,
    *community.ENTRIES,
    *mcp.ENTRIES,
    *images.ENTRIES,
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

_LISTS_ALL = "(n8n-deepeval metrics lists all)"


def suggest_slug(name: str) -> str | None:
    """The slug a mistyped metric name most likely meant, if one is close enough.

    camelCase, display names and dashes are folded to snake_case first, so that
    ``answerRelevancy`` and ``G-Eval`` find ``answer_relevancy`` and ``g_eval``.
    """
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    folded = re.sub(r"[\s\-]+", "_", snake).lower()
    close = difflib.get_close_matches(folded, CATALOG, n=1)
    return close[0] if close else None


def _unknown_metric(slug: str) -> ValidationError:
    suggestion = suggest_slug(slug)
    if suggestion is not None:
        template = "unknown metric '{slug}'; did you mean '{suggestion}'? " + _LISTS_ALL
        context = {"slug": slug, "suggestion": suggestion}
    else:
        template = "unknown metric '{slug}'; expected one of: {slugs}"
        context = {"slug": slug, "slugs": ", ".join(sorted(CATALOG))}
    return _slug_error(PydanticCustomError(UNKNOWN_METRIC, template, context), slug)


def _slug_error(error: PydanticCustomError, slug: object) -> ValidationError:
    # Raised as a ValidationError so the location ends at the field: metrics[2].metric.
    details = InitErrorDetails(type=error, loc=("metric",), input=slug)
    return ValidationError.from_exception_data("metric", [details])


_NO_SLUG = PydanticCustomError(
    MISSING_METRIC, "missing: each metric entry names its slug, e.g. 'metric: g_eval' " + _LISTS_ALL
)


def _known_slug(value: object) -> object:
    """Reject an unknown or missing slug before the union does: its errors give no hint."""
    if isinstance(value, Mapping):
        slug = value.get("metric")
        if slug is None:
            raise _slug_error(_NO_SLUG, None)
        if isinstance(slug, str) and slug not in CATALOG:
            raise _unknown_metric(slug)
    return value


if TYPE_CHECKING:
    MetricSpec = MetricConfig
else:
    # One tagged union over every config model: the slug picks the model; an unknown
    # slug is answered with the closest known one.
    MetricSpec = Annotated[
        Union[tuple(entry.config_model for entry in _ENTRIES)],  # noqa: UP007
        Field(discriminator="metric"),
        BeforeValidator(_known_slug),
    ]


def entry_for(config: MetricConfig) -> MetricEntry:
    """The catalog entry of a validated metric config."""
    return CATALOG[config.metric]
