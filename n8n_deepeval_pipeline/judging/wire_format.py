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
import json
import sys
from typing import Any, cast

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.spec import StructuredOutputs


@functools.cache
def plain_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The plain JSON schema of a class, built once (pydantic rebuilds it on every call)."""
    return schema.model_json_schema()


def schema_built_once(schema: type[BaseModel]) -> type[BaseModel]:
    """``schema`` as DeepEval's model classes are given it: its JSON schema built once.

    DeepEval's Anthropic, OpenRouter and Ollama classes call ``model_json_schema()`` on
    the metric's schema for every call (~0.3 ms of CPU, the larger part of such a call).
    A subclass, named and documented as the schema, answers that call (with its default
    arguments) with a copy of what pydantic built once: a class may change the copy it is
    given, as OpenRouter's does. Given only where pydantic's own generation of the
    subclass is the schema's (else the schema itself): whoever builds the JSON schema of
    the class another way (the openai SDK's ``parse``) builds the same. Only for a schema
    its module names (DeepEval's metrics keep theirs so): one made anew for each metric
    (a DAG's verdict node makes its own) is given as it is.
    """
    module = sys.modules.get(schema.__module__)
    if getattr(module, schema.__qualname__, None) is not schema:
        return schema
    return _built_once(schema)


@functools.lru_cache(maxsize=256)
def _built_once(schema: type[BaseModel]) -> type[BaseModel]:
    from pydantic.json_schema import model_json_schema

    built = schema.model_json_schema()
    text = json.dumps(built)

    def built_once(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        if args or kwargs:
            return schema.model_json_schema(*args, **kwargs)
        return cast(dict[str, Any], json.loads(text))

    namespace = {
        "__doc__": schema.__doc__,
        "__module__": schema.__module__,
        "__qualname__": schema.__qualname__,
        "model_json_schema": classmethod(built_once),
    }
    metaclass: Any = type(schema)  # pydantic's, which makes the subclass a model
    once = cast(type[BaseModel], metaclass(schema.__name__, (schema,), namespace))
    if model_json_schema(once) != built or json.loads(text) != built:
        return schema
    return once


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
