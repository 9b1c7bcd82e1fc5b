"""A pydantic model from the JSON Schema a benchmark gives JSON Correctness.

DeepEval's JSON Correctness validates the output with a pydantic model; a benchmark
file holds a JSON Schema instead. The common subset is supported: ``object`` with
``properties`` and ``required``, ``array`` with ``items``, ``string``, ``number``,
``integer``, ``boolean``, ``null``, ``enum``, and a list of types.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, RootModel, create_model

_SCALARS: dict[str, Any] = {
    "string": str,
    "number": float,
    "integer": int,
    "boolean": bool,
    "null": type(None),
}


class JsonSchemaError(ValueError):
    """The schema uses something outside the supported subset."""


def _annotation(schema: Any, path: str) -> Any:
    if not isinstance(schema, dict):
        raise JsonSchemaError(f"{path}: a schema must be an object")
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        branches = [_annotation({**schema, "type": one}, path) for one in kind]
        union: Any = branches[0]
        for branch in branches[1:]:
            union = union | branch
        return union
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return list[_annotation(schema.get("items", {"type": "string"}), f"{path}.items")]  # type: ignore[misc]
    if kind == "object" or "properties" in schema:
        return _object_model(schema, path)
    raise JsonSchemaError(f"{path}: unsupported type {kind!r}")


def _object_model(schema: dict[str, Any], path: str) -> type[BaseModel]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields: dict[str, Any] = {}
    for name, subschema in properties.items():
        annotation = _annotation(subschema, f"{path}.{name}")
        fields[name] = (annotation, ...) if name in required else (annotation | None, None)
    config = ConfigDict(extra="forbid" if schema.get("additionalProperties") is False else "allow")
    title = str(schema.get("title") or "ExpectedOutput")
    return create_model(title, __config__=config, **fields)


def model_from_json_schema(schema: dict[str, Any]) -> type[BaseModel]:
    """A model whose validation accepts exactly the JSON the schema describes (subset)."""
    annotation = _annotation(schema, "expectedSchema")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return RootModel[annotation]  # type: ignore[valid-type]
