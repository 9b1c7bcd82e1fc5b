"""What a judge request carries, in the form DeepEval's own model classes send it.

DeepEval's OpenAI and Azure models ask through the openai SDK's ``parse``, which turns the
metric's pydantic schema into a strict JSON schema (``additionalProperties: false``, every
property required, defaults dropped, ``strict: true``); its Anthropic model constrains
decoding with ``output_config`` built by the anthropic SDK's ``transform_schema``. Both
conversions are the SDKs' own, imported here, so the schema a judge sees is the one it
would see from DeepEval. Worker side only: the SDKs come with DeepEval.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.spec import StructuredOutputs


@dataclass(frozen=True)
class ModelCapabilities:
    """What DeepEval's model data says of a judge model (worker side, from DeepEval)."""

    logprobs: bool = True  # whether G-Eval asks it for log-probabilities
    max_logprobs: int | None = None  # DeepEval caps ``top_logprobs`` at this
    structured: bool = True  # Anthropic: whether the model takes ``output_config``
    max_tokens: int | None = None  # Anthropic: DeepEval's default ``max_tokens``
    temperature: bool = True  # reasoning models refuse one: DeepEval sends none to them


@functools.cache
def plain_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The plain JSON schema of a class, built once (pydantic rebuilds it on every call)."""
    return schema.model_json_schema()


@functools.cache
def _strict_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    # The conversion the SDK's ``beta.chat.completions.parse`` applies to a pydantic class.
    from openai.lib._parsing._completions import type_to_response_format_param

    return cast(dict[str, Any], type_to_response_format_param(schema))


def openai_response_format(
    schema: type[BaseModel], mode: StructuredOutputs
) -> dict[str, Any] | None:
    """The ``response_format`` of a chat completion request for ``schema`` (None: none)."""
    if mode == "strict":
        return _strict_response_format(schema)
    if mode == "schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": plain_json_schema(schema)},
        }
    if mode == "json":
        return {"type": "json_object"}
    return None


@functools.cache
def anthropic_output_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``output_config.format`` DeepEval's Anthropic model sends for ``schema``."""
    from anthropic import transform_schema

    return {"type": "json_schema", "schema": transform_schema(schema)}


def text_parts(prompt: str) -> list[dict[str, str]]:
    """A text-only prompt as a list of content parts, as DeepEval's OpenAI model sends it."""
    return [{"type": "text", "text": prompt}]
