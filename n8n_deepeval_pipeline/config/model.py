"""The base of every benchmark-file model: camelCase keys in YAML, nothing unknown, frozen.

Strict: ``threshold: true`` or ``strictMode: "yes"`` is a mistake to name, not a value to
convert (a whole number is still a number); ``.inf`` and ``.nan`` are no numbers either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

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
    extra="forbid",
    alias_generator=to_camel,
    populate_by_name=True,
    frozen=True,
    strict=True,
    allow_inf_nan=False,
)


class ConfigModel(BaseModel):
    """A part of a benchmark file (``columnMapping`` in YAML is ``column_mapping`` here)."""

    model_config = STRICT_CONFIG


class StatedDefaults(GenerateJsonSchema):
    """A JSON schema that states the defaults factories make, as editors and the docs show.

    pydantic leaves them out: ``filters`` would have no default, and ``columnMapping``
    none of the seed's ``{input: input, expectedOutput: expectedOutput}``.
    """

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        """The static default, or what a factory without arguments makes."""
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            return factory()  # type: ignore[call-arg]
        return super().get_default_value(schema)
