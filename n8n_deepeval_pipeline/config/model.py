"""The base of every benchmark-file model: camelCase keys in YAML, nothing unknown, frozen.

Strict: ``threshold: true`` or ``strictMode: "yes"`` is a mistake to name, not a value to
convert (a whole number is still a number).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel

# A file path: YAML can only write it as text, which strict validation alone would refuse.
FilePath = Annotated[Path, Strict(False)]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


# Text that means something only when there is some (a label, G-Eval's criteria); editors
# are told through the schema's minLength.
NonBlank = Annotated[str, AfterValidator(_not_blank), Field(json_schema_extra={"minLength": 1})]

STRICT_CONFIG = ConfigDict(
    extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, strict=True
)


class ConfigModel(BaseModel):
    """A part of a benchmark file (``columnMapping`` in YAML is ``column_mapping`` here)."""

    model_config = STRICT_CONFIG
