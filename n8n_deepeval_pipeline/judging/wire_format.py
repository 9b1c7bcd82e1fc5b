"""A metric's answer schema in the forms judge requests carry it.

DeepEval's OpenAI-family classes ask through the openai SDK's ``parse``, which turns the
metric's pydantic schema into a strict JSON schema (``additionalProperties: false``, every
property required, defaults dropped, ``strict: true``) on every call; the conversion is
the SDK's own, imported here and made once per schema (the SDK takes the converted form
as it is and sends the same bytes). An ``openai-compatible`` judge is asked in the form
its ``structuredOutputs`` setting names. Worker side only: the SDK comes with DeepEval.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.spec import StructuredOutputs


@functools.cache
def plain_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The plain JSON schema of a class, built once (pydantic rebuilds it on every call)."""
    return schema.model_json_schema()


@functools.cache
def strict_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` the openai SDK's ``parse`` sends for ``schema``."""
    from openai.lib._parsing._completions import type_to_response_format_param

    return cast(dict[str, Any], type_to_response_format_param(schema))


def openai_response_format(
    schema: type[BaseModel], mode: StructuredOutputs
) -> dict[str, Any] | None:
    """The ``response_format`` of a chat completion request for ``schema`` (None: none)."""
    if mode == "strict":
        return strict_response_format(schema)
    if mode == "schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": plain_json_schema(schema)},
        }
    if mode == "json":
        return {"type": "json_object"}
    return None
