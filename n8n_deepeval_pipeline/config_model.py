"""The base of every benchmark-file model: camelCase keys in YAML, nothing unknown, frozen."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ConfigModel(BaseModel):
    """A part of a benchmark file (``columnMapping`` in YAML is ``column_mapping`` here)."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )
